package background

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/keel-dev/keel/internal/atomicfile"
	"github.com/keel-dev/keel/internal/message"
)

// Notification tells an agent that one of its background tasks ended.
type Notification struct {
	TaskID    string `json:"taskId"`
	ToolUseID string `json:"toolUseId,omitempty"`
	Status    Status `json:"status"`
	// Summary is one line for the UI ("Agent "x" completed").
	Summary string `json:"summary"`
	Result  string `json:"result,omitempty"`
	Error   string `json:"error,omitempty"`
}

// marker opens the text of a notification; its presence in a history proves the notification
// was delivered.
func (n Notification) marker() string {
	return "<task-notification>\n<task-id>" + n.TaskID + "</task-id>\n"
}

// Text is the notification as the model reads it, in Claude Code's tag format.
func (n Notification) Text() string {
	var b strings.Builder
	b.WriteString(n.marker())
	if n.ToolUseID != "" {
		fmt.Fprintf(&b, "<tool-use-id>%s</tool-use-id>\n", n.ToolUseID)
	}
	fmt.Fprintf(&b, "<status>%s</status>\n<summary>%s</summary>\n", n.Status, n.Summary)
	if n.Result != "" {
		fmt.Fprintf(&b, "<result>%s</result>\n", n.Result)
	}
	if n.Error != "" {
		fmt.Fprintf(&b, "<error>%s</error>\n", n.Error)
	}
	b.WriteString("</task-notification>")
	return b.String()
}

// Queue holds the undelivered notifications of one owner. It is durable when it has a
// directory: each notification is a file written atomically before Push returns, and deleted
// only by Ack, after the request that carried it was sent and the transcript that recorded it
// was synced. A process that dies in between leaves the file; the next process redelivers it,
// unless Reconcile finds it in the resumed history already — so a notification is never lost
// and never delivered twice.
//
// A Queue is safe for concurrent use.
type Queue struct {
	dir string

	// mu guards pending, inflight, seen and seq.
	mu       sync.Mutex
	pending  []queued
	inflight []queued
	seen     map[string]bool
	seq      int64
}

type queued struct {
	n    Notification
	file string
}

// OpenQueue opens the queue persisted in dir, creating dir; the notifications found there are
// pending again. An empty dir makes a queue in memory only.
func OpenQueue(dir string) (*Queue, error) {
	q := &Queue{dir: dir, seen: map[string]bool{}}
	if dir == "" {
		return q, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open notification queue: %w", err)
	}
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("open notification queue: %w", err)
	}
	slices.Sort(names)
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read notification: %w", err)
		}
		var n Notification
		if err := json.Unmarshal(b, &n); err != nil {
			// Files are renamed into place whole, so this is not a torn write; keep it for a
			// human rather than deliver garbage.
			continue
		}
		if !q.seen[n.TaskID] {
			q.seen[n.TaskID] = true
			q.pending = append(q.pending, queued{n, name})
		}
	}
	return q, nil
}

// Push queues n; a second notification for the same task is ignored.
func (q *Queue) Push(n Notification) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.seen[n.TaskID] {
		return nil
	}
	item := queued{n: n}
	if q.dir != "" {
		q.seq++
		item.file = filepath.Join(q.dir, fmt.Sprintf("%019d-%03d-%s.json", time.Now().UnixNano(), q.seq%1000, n.TaskID))
		b, err := json.Marshal(n)
		if err != nil {
			return fmt.Errorf("encode notification: %w", err)
		}
		if err := atomicfile.WriteFile(item.file, b, 0o600); err != nil {
			return fmt.Errorf("persist notification: %w", err)
		}
	}
	q.seen[n.TaskID] = true
	q.pending = append(q.pending, item)
	return nil
}

// Observe hands the pending notifications to the next request, as text blocks; it is the
// queue's [loop.Observer] side. They stay on disk until Ack.
func (q *Queue) Observe(ctx context.Context) []message.Block {
	q.rescan()
	q.mu.Lock()
	defer q.mu.Unlock()
	var blocks []message.Block
	for _, it := range q.pending {
		blocks = append(blocks, message.Text(it.n.Text()))
	}
	q.inflight = append(q.inflight, q.pending...)
	q.pending = nil
	return blocks
}

// Ack forgets the notifications handed out by Observe. Call it after the request that carried
// them was sent and the transcript synced.
func (q *Queue) Ack() error {
	q.mu.Lock()
	done := q.inflight
	q.inflight = nil
	q.mu.Unlock()
	var errs []error
	for _, it := range done {
		if it.file == "" {
			continue
		}
		if err := os.Remove(it.file); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Requeue puts notifications handed out but not acked back in front (the request that was to
// carry them failed before it was sent).
func (q *Queue) Requeue() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pending = append(q.inflight, q.pending...)
	q.inflight = nil
}

// Reconcile drops, and deletes, the pending notifications that history already holds: they
// were delivered and recorded, but the process died before Ack.
func (q *Queue) Reconcile(history []message.Message) error {
	var text strings.Builder
	for _, m := range history {
		if m.Role == message.RoleUser {
			for _, b := range m.Content {
				if b.Type == message.TypeText {
					text.WriteString(b.Text)
				}
			}
		}
	}
	all := text.String()
	q.mu.Lock()
	var keep, drop []queued
	for _, it := range q.pending {
		if strings.Contains(all, it.n.marker()) {
			drop = append(drop, it)
		} else {
			keep = append(keep, it)
		}
	}
	q.pending = keep
	q.mu.Unlock()
	var errs []error
	for _, it := range drop {
		if it.file != "" {
			if err := os.Remove(it.file); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Len returns how many notifications wait for delivery.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending)
}

// take removes and returns the pending notifications (for re-homing them to another owner).
func (q *Queue) take() []queued {
	q.mu.Lock()
	defer q.mu.Unlock()
	p := q.pending
	q.pending = nil
	return p
}

func removeFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
