package background

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"

	"github.com/keel-dev/keel/internal/event"
)

// Remote tasks run in another process — the supervisor, which outlives this one — and queue
// their notification themselves, as a file in the owner's queue directory. This process keeps
// a mirror of the task (its row, its status, Outstanding) whose run function waits for the
// remote end. The queue picks up files that others wrote at every request boundary (rescan),
// so a notification reaches a live owner as well as the next process that opens the queue.

// finishRemote ends the mirror of a remote task. When the registry closed (this process is
// exiting), the task goes on elsewhere: nothing is queued here. Otherwise its notification is
// already in the owner's queue directory; the queue reads it in.
func (r *Registry) finishRemote(ctx context.Context, t *Task, result string, err error) {
	defer close(t.done)
	if ctx.Err() != nil && !errors.Is(context.Cause(ctx), ErrKilled) {
		return // detached: the supervisor reports to the next process
	}
	status, errText := StatusCompleted, ""
	switch {
	case errors.Is(context.Cause(ctx), ErrKilled) || errors.Is(err, ErrKilled):
		status, errText = StatusKilled, ErrKilled.Error()
	case err != nil:
		status, errText = StatusFailed, err.Error()
	}
	t.setStatus(status, result, errText)
	r.mu.Lock()
	q, qerr := r.queueLocked(r.resolveLocked(t.spec.Owner))
	r.mu.Unlock()
	if qerr == nil {
		q.rescan()
	}
	r.emit(eventNotification(t.spec, status, result))
	r.signal()
}

// QueueDir returns where owner's notifications are kept ("" when the registry keeps them in
// memory), so that a remote task can write its notification there.
func (r *Registry) QueueDir(owner string) string {
	if r.opts.Dir == "" {
		return ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return filepath.Join(r.opts.Dir, r.resolveLocked(owner))
}

// rescan adds the notifications that another process wrote into the queue's directory since
// it was opened. A file for a task this queue has seen is a duplicate (a writer that retried
// after a crash) and is removed.
func (q *Queue) rescan() {
	if q.dir == "" {
		return
	}
	names, err := filepath.Glob(filepath.Join(q.dir, "*.json"))
	if err != nil {
		return
	}
	slices.Sort(names)
	q.mu.Lock()
	defer q.mu.Unlock()
	known := map[string]bool{}
	for _, it := range slices.Concat(q.pending, q.inflight) {
		known[it.file] = true
	}
	for _, name := range names {
		if known[name] {
			continue
		}
		b, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		var n Notification
		if json.Unmarshal(b, &n) != nil || n.TaskID == "" {
			continue
		}
		if q.seen[n.TaskID] {
			_ = os.Remove(name)
			continue
		}
		q.seen[n.TaskID] = true
		q.pending = append(q.pending, queued{n, name})
	}
}

func eventNotification(spec Spec, status Status, result string) event.Event {
	return event.TaskNotification{Origin: spec.Origin, TaskID: spec.ID, ToolUseID: spec.ToolUseID, Status: string(status),
		Summary: summary(spec, status), Result: result}
}
