package coord

import (
	"context"
	"encoding/json"
	"time"
)

// TaskStatus is where a task stands, with Claude Code's values.
type TaskStatus string

// The statuses.
const (
	StatusPending    TaskStatus = "pending"
	StatusInProgress TaskStatus = "in_progress"
	StatusCompleted  TaskStatus = "completed"
)

// Valid reports whether s is one of the statuses.
func (s TaskStatus) Valid() bool {
	return s == StatusPending || s == StatusInProgress || s == StatusCompleted
}

// Task is one entry of the board; JSON field names follow Claude Code's task tools.
type Task struct {
	// ID is assigned by the board: "1", "2", … in creation order.
	ID          string     `json:"id"`
	Subject     string     `json:"subject"`
	Description string     `json:"description,omitempty"`
	ActiveForm  string     `json:"activeForm,omitempty"`
	Status      TaskStatus `json:"status"`
	// Owner is the member that holds the task (in progress) or that it is assigned to
	// (pending); empty for nobody.
	Owner string `json:"owner,omitempty"`
	// BlockedBy are the tasks that must be completed before this one can be claimed.
	BlockedBy []string `json:"blockedBy,omitempty"`
	// Blocks are the tasks waiting for this one. Derived from every task's BlockedBy when
	// read; never stored.
	Blocks   []string                   `json:"blocks,omitempty"`
	Metadata map[string]json.RawMessage `json:"metadata,omitempty"`
	// LeaseUntil is when Owner's claim lapses unless renewed; zero when the task is not
	// claimed under a lease.
	LeaseUntil time.Time `json:"leaseUntil,omitzero"`
	// Releases counts the times the task was given back unfinished ([Board.Release]);
	// ReleasedBy is who gave it back last, and RetryAfter when [Board.ClaimNext] lets that
	// member take it again (a backoff with jitter, so a member that cannot finish a task does
	// not take it back at once, again and again). A task released [ContestedAfter] times is
	// contested ([Contested]): ClaimNext leaves it to whom the lead assigns it.
	Releases   int       `json:"releases,omitempty"`
	ReleasedBy string    `json:"releasedBy,omitempty"`
	RetryAfter time.Time `json:"retryAfter,omitzero"`
	// Revision counts the task's changes; it starts at 1.
	Revision uint64    `json:"revision"`
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`
}

// TaskChange is an update of one task; nil and empty fields change nothing.
type TaskChange struct {
	Subject     *string
	Description *string
	ActiveForm  *string
	Status      *TaskStatus
	// Owner assigns the task ("" unassigns).
	Owner *string
	// AddBlockedBy makes this task wait for others; AddBlocks makes others wait for it. An
	// unknown task is [ErrNotFound], a dependency loop [ErrCycle].
	AddBlockedBy []string
	AddBlocks    []string
	// Metadata is merged in; a JSON null value deletes the key.
	Metadata map[string]json.RawMessage
	// IfOwner, when set, applies the change only if the task's owner is *IfOwner (""
	// meaning unowned); otherwise the change fails with [ErrNotOwner]. A teammate whose lease
	// lapsed and whose task was claimed by another cannot complete it.
	IfOwner *string
}

// Board is a team's shared task list.
type Board interface {
	// Create adds a task with the next id; Status defaults to pending. BlockedBy must name
	// existing tasks.
	Create(ctx context.Context, t Task) (Task, error)
	// Get returns one task ([ErrNotFound]).
	Get(ctx context.Context, id string) (Task, error)
	// List returns every task in id order.
	List(ctx context.Context) ([]Task, error)
	// Update applies ch atomically and returns the task as it is now. Setting status
	// completed ends the claim's lease; setting pending releases it.
	Update(ctx context.Context, id string, ch TaskChange) (Task, error)
	// Delete removes a task and every dependency on it ([ErrNotFound] for an unknown id). Ids
	// are never reused.
	Delete(ctx context.Context, id string) error
	// Claim makes owner hold task id under a lease, atomically: the task must be pending and
	// unassigned or assigned to owner, or in progress under a lapsed lease, and not blocked.
	// Otherwise it fails with [ErrClaimed], [ErrBlocked], [ErrCompleted] or [ErrNotFound],
	// wrapped in a message that says why. Claiming a task owner already holds renews it.
	Claim(ctx context.Context, id, owner string, lease time.Duration) (Task, error)
	// ClaimNext claims the first task owner may take, in this order: one owner already holds,
	// a pending one assigned to owner, any other claimable one — lowest id first within each;
	// the last of these leaves out a contested task and one owner released whose RetryAfter
	// has not come. [ErrNoTask] when there is none.
	ClaimNext(ctx context.Context, owner string, lease time.Duration) (Task, error)
	// Renew extends owner's lease on task id; [ErrNotOwner] when owner does not hold it any
	// more (its lease lapsed and another member claimed it).
	Renew(ctx context.Context, id, owner string, lease time.Duration) (Task, error)
	// Release gives a held task back: pending, unowned, no lease ([ErrNotOwner] if owner does
	// not hold it); it counts the release and sets the releaser's backoff ([Released]).
	Release(ctx context.Context, id, owner string) (Task, error)
	// Watch signals whenever a task may have changed. A lease lapsing is not a change: a
	// waiter that wants lapsed claims sets a timer for the earliest LeaseUntil.
	Watch(ctx context.Context) (<-chan struct{}, error)
}
