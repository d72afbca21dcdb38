// Package background keeps the task registry of a session — background agents and other
// long-running work, with status pending/running/completed/failed/killed, progress and a
// terminal result — and the notification queues through which a finished task reports to the
// agent that owns it. A queue is a [loop.Observer]: notifications join the owner's next
// request and are acked only after that request was sent and recorded (see [Queue]).
//
// The registry is in-process: a row proves nothing about a worker in another process. The
// supervisor daemon (a later issue) will own tasks that outlive the process; notifications,
// which are persisted, already survive it.
package background

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/keel-dev/keel/internal/event"
)

// Status is a task's state.
type Status string

// The statuses; the last three are terminal.
const (
	StatusPending   Status = "pending"
	StatusRunning   Status = "running"
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	StatusKilled    Status = "killed"
)

// Terminal reports whether the task has ended.
func (s Status) Terminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusKilled
}

// MainOwner owns the tasks the main thread starts.
const MainOwner = "main"

// ErrKilled is the cause of a task stopped with [Registry.Stop].
var ErrKilled = errors.New("task stopped")

// ErrNotFound is returned for an unknown task id.
var ErrNotFound = errors.New("no such task")

// Spec describes a task to start.
type Spec struct {
	// ID is the task id; the Agent tool uses the agent id so that both name the same thing.
	ID   string
	Kind string // "local_agent", "local_bash", …
	// Owner is the agent id that gets the notification (MainOwner for the main thread).
	Owner       string
	Description string
	ToolUseID   string
	// Origin is the origin of the task's events.
	Origin event.Origin
	// Prompt and SubagentType describe an agent task, for the task_started event.
	Prompt       string
	SubagentType string
	// Announced says task_started was already emitted (a foreground agent moved to the
	// background keeps its id and was announced when it started).
	Announced bool
	// Remote says the task runs outside this process (in the supervisor), which queues its
	// notification itself, in the owner's queue directory: this process only mirrors its state
	// (see remote.go). Closing the registry leaves a remote task running.
	Remote bool
}

// Info is a snapshot of one task.
type Info struct {
	ID          string    `json:"task_id"`
	Kind        string    `json:"task_type"`
	Owner       string    `json:"owner"`
	Description string    `json:"description"`
	ToolUseID   string    `json:"tool_use_id,omitempty"`
	Status      Status    `json:"status"`
	Result      string    `json:"result,omitempty"`
	Error       string    `json:"error,omitempty"`
	Output      string    `json:"output,omitempty"`
	Started     time.Time `json:"start_time"`
	Ended       time.Time `json:"end_time,omitzero"`
}

// Task is a running task, handed to its run function to report progress.
type Task struct {
	r    *Registry
	spec Spec
	done chan struct{}
	stop context.CancelCauseFunc

	// mu guards info and usage.
	mu    sync.Mutex
	info  Info
	usage *event.TaskUsage
}

// SetUsage records what the task used, for its notification event.
func (t *Task) SetUsage(u event.TaskUsage) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.usage = &u
}

// ID returns the task id.
func (t *Task) ID() string { return t.spec.ID }

// Progress appends a line to the task's output and tells the UI.
func (t *Task) Progress(line string) {
	t.mu.Lock()
	t.info.Output += strings.TrimRight(line, "\n") + "\n"
	t.mu.Unlock()
	t.r.emit(event.TaskUpdated{Origin: t.spec.Origin, TaskID: t.spec.ID, Status: string(StatusRunning)})
}

func (t *Task) snapshot() Info {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.info
}

// Options configure a Registry.
type Options struct {
	// Dir persists the notification queues (one folder per owner); empty keeps them in memory.
	Dir string
	// Emit receives task events; nil drops them. It is called from task goroutines.
	Emit   func(event.Event)
	Logger *slog.Logger
	Now    func() time.Time
}

// Registry is a session's task table. It is safe for concurrent use.
type Registry struct {
	opts Options
	wg   sync.WaitGroup
	// ctx parents every task, so Close stops them all.
	ctx    context.Context
	cancel context.CancelFunc

	// mu guards tasks, queues, redirect and changed.
	mu       sync.Mutex
	tasks    map[string]*Task
	queues   map[string]*Queue
	redirect map[string]string
	// changed is closed and replaced whenever a task ends or a notification is queued.
	changed chan struct{}
}

// New makes an empty registry.
func New(opts Options) *Registry {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Registry{opts: opts, ctx: ctx, cancel: cancel, tasks: map[string]*Task{}, queues: map[string]*Queue{},
		redirect: map[string]string{}, changed: make(chan struct{})}
}

func (r *Registry) emit(e event.Event) {
	if r.opts.Emit != nil {
		r.opts.Emit(e)
	}
}

// SetEmit replaces the event callback (a session points it at the Send in progress).
func (r *Registry) SetEmit(emit func(event.Event)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.opts.Emit = emit
}

// Queue returns the notification queue of owner, opening its persisted files on first use.
func (r *Registry) Queue(owner string) (*Queue, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.queueLocked(owner)
}

func (r *Registry) queueLocked(owner string) (*Queue, error) {
	if q, ok := r.queues[owner]; ok {
		return q, nil
	}
	dir := ""
	if r.opts.Dir != "" {
		dir = filepath.Join(r.opts.Dir, owner)
	}
	q, err := OpenQueue(dir)
	if err != nil {
		return nil, err
	}
	r.queues[owner] = q
	return q, nil
}

// Start runs run in its own goroutine as a new task and returns at once. The task ends when
// run returns: completed with its result, failed with its error, or killed when it was
// stopped. Its notification then goes to the owner's queue (or the owner's adopter, see
// [Registry.Adopt]). run's context is not the caller's: a task outlives the turn that
// started it.
func (r *Registry) Start(spec Spec, run func(ctx context.Context, t *Task) (string, error)) (*Task, error) {
	if spec.Owner == "" {
		spec.Owner = MainOwner
	}
	ctx, stop := context.WithCancelCause(r.ctx)
	t := &Task{r: r, spec: spec, done: make(chan struct{}), stop: stop, info: Info{
		ID: spec.ID, Kind: spec.Kind, Owner: spec.Owner, Description: spec.Description, ToolUseID: spec.ToolUseID,
		Status: StatusPending, Started: r.opts.Now(),
	}}
	r.mu.Lock()
	if _, dup := r.tasks[spec.ID]; dup {
		r.mu.Unlock()
		stop(nil)
		return nil, fmt.Errorf("start task: id %s is taken", spec.ID)
	}
	r.tasks[spec.ID] = t
	r.mu.Unlock()
	if !spec.Announced {
		r.emit(event.TaskStarted{Origin: spec.Origin, TaskID: spec.ID, ToolUseID: spec.ToolUseID, Description: spec.Description,
			SubagentType: spec.SubagentType, TaskType: spec.Kind, Prompt: spec.Prompt})
	}
	r.wg.Go(func() {
		defer stop(nil)
		t.setStatus(StatusRunning, "", "")
		result, err := run(ctx, t)
		status, errText := StatusCompleted, ""
		switch {
		case errors.Is(context.Cause(ctx), ErrKilled):
			status, errText = StatusKilled, ErrKilled.Error()
		case err != nil:
			status, errText = StatusFailed, err.Error()
		}
		if spec.Remote {
			r.finishRemote(ctx, t, result, err)
			return
		}
		t.setStatus(status, result, errText)
		r.notify(t, Notification{TaskID: spec.ID, ToolUseID: spec.ToolUseID, Status: status,
			Summary: summary(spec, status), Result: result, Error: errText})
		close(t.done)
	})
	return t, nil
}

func summary(spec Spec, s Status) string {
	what := "Task"
	if spec.Kind == "local_agent" {
		what = "Agent"
	}
	return fmt.Sprintf("%s %q %s", what, spec.Description, s)
}

func (t *Task) setStatus(s Status, result, errText string) {
	t.mu.Lock()
	t.info.Status, t.info.Result, t.info.Error = s, result, errText
	if s.Terminal() {
		t.info.Ended = t.r.opts.Now()
	}
	t.mu.Unlock()
	t.r.emit(event.TaskUpdated{Origin: t.spec.Origin, TaskID: t.spec.ID, Status: string(s)})
}

// notify queues n for the task's owner, following adoptions.
func (r *Registry) notify(t *Task, n Notification) {
	r.mu.Lock()
	owner := r.resolveLocked(t.spec.Owner)
	q, err := r.queueLocked(owner)
	r.mu.Unlock()
	if err == nil {
		err = q.Push(n)
	}
	if err != nil {
		r.opts.Logger.Error("queue task notification", "task", n.TaskID, "err", err)
	}
	t.mu.Lock()
	usage := t.usage
	t.mu.Unlock()
	r.emit(event.TaskNotification{Origin: t.spec.Origin, TaskID: n.TaskID, ToolUseID: n.ToolUseID, Status: string(n.Status),
		Summary: n.Summary, Result: n.Result, Usage: usage})
	r.signal()
}

func (r *Registry) resolveLocked(owner string) string {
	for range 64 { // adoption chains are short; the bound guards against a cycle
		next, ok := r.redirect[owner]
		if !ok {
			break
		}
		owner = next
	}
	return owner
}

func (r *Registry) signal() {
	r.mu.Lock()
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

// Adopt hands from's notifications to to: the ones waiting now and those of tasks still
// running. A subagent whose turn ended calls it for its parent, so a background task it
// started reports to someone who will read it. Reclaim undoes it when the subagent runs
// again.
func (r *Registry) Adopt(from, to string) error {
	r.mu.Lock()
	if from == to {
		r.mu.Unlock()
		return nil
	}
	r.redirect[from] = to
	src, err := r.queueLocked(from)
	if err != nil {
		r.mu.Unlock()
		return err
	}
	dst, err := r.queueLocked(r.resolveLocked(to))
	r.mu.Unlock()
	if err != nil {
		return err
	}
	var errs []error
	for _, it := range src.take() {
		errs = append(errs, dst.Push(it.n))
		if it.file != "" {
			errs = append(errs, removeFile(it.file))
		}
	}
	r.signal()
	return errors.Join(errs...)
}

// Reclaim ends an adoption made by Adopt.
func (r *Registry) Reclaim(owner string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.redirect, owner)
}

// Get returns a task's snapshot.
func (r *Registry) Get(id string) (Info, bool) {
	r.mu.Lock()
	t, ok := r.tasks[id]
	r.mu.Unlock()
	if !ok {
		return Info{}, false
	}
	return t.snapshot(), true
}

// List returns every task, oldest first.
func (r *Registry) List() []Info {
	r.mu.Lock()
	out := make([]Info, 0, len(r.tasks))
	for _, t := range r.tasks {
		out = append(out, t.snapshot())
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b Info) int { return a.Started.Compare(b.Started) })
	return out
}

// Stop kills a running task and waits for it to end.
func (r *Registry) Stop(ctx context.Context, id string) (Info, error) {
	r.mu.Lock()
	t, ok := r.tasks[id]
	r.mu.Unlock()
	if !ok {
		return Info{}, fmt.Errorf("stop task %s: %w", id, ErrNotFound)
	}
	t.stop(ErrKilled)
	return r.Wait(ctx, id)
}

// Wait blocks until the task ends or ctx is done.
func (r *Registry) Wait(ctx context.Context, id string) (Info, error) {
	r.mu.Lock()
	t, ok := r.tasks[id]
	r.mu.Unlock()
	if !ok {
		return Info{}, fmt.Errorf("wait for task %s: %w", id, ErrNotFound)
	}
	select {
	case <-t.done:
		return t.snapshot(), nil
	case <-ctx.Done():
		return t.snapshot(), context.Cause(ctx)
	}
}

// Outstanding returns how many tasks that report to owner (directly or by adoption) have not
// ended.
func (r *Registry) Outstanding(owner string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, t := range r.tasks {
		if r.resolveLocked(t.spec.Owner) != owner {
			continue
		}
		// A task counts until its notification is queued, not merely until its status is
		// terminal, so a waiter never sees "nothing outstanding, nothing queued" in between.
		select {
		case <-t.done:
		default:
			n++
		}
	}
	return n
}

// WaitIdle blocks until owner has no outstanding task and at least one notification waits,
// or no outstanding task and none waits; it returns the number of waiting notifications.
// keel -p uses it to give the main thread a turn for its background agents before exiting.
func (r *Registry) WaitIdle(ctx context.Context, owner string) (int, error) {
	for {
		r.mu.Lock()
		ch := r.changed
		r.mu.Unlock()
		q, err := r.Queue(owner)
		if err != nil {
			return 0, err
		}
		if r.Outstanding(owner) == 0 || q.Len() > 0 {
			return q.Len(), nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return q.Len(), context.Cause(ctx)
		}
	}
}

// Close kills every running task and waits for all to end.
func (r *Registry) Close() {
	r.mu.Lock()
	for _, t := range r.tasks {
		if !t.spec.Remote {
			t.stop(ErrKilled)
		}
	}
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
}
