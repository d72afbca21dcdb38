package coord

import (
	"context"
	"encoding/json"
	"time"
)

// Request is a question one member puts to another across processes: a teammate's
// permission ask to its lead. The backend reads ID and To; Type and Data are the team's.
type Request struct {
	ID   string `json:"id"`
	From string `json:"from"`
	To   string `json:"to"`
	Type string `json:"type"`
	// Data describes the question (for a permission: the tool, its input, the worker's
	// colour, the rules an "always" answer would add).
	Data    json.RawMessage `json:"data,omitempty"`
	Created time.Time       `json:"created"`
}

// Resolution answers a [Request].
type Resolution struct {
	ID string `json:"id"`
	By string `json:"by,omitempty"`
	// Data is the answer (for a permission: allow or deny, the reason, rule updates).
	Data     json.RawMessage `json:"data,omitempty"`
	Resolved time.Time       `json:"resolved"`
}

// Requests holds pending and resolved requests.
type Requests interface {
	// Submit stores a pending request; submitting an id again is a no-op. A request larger
	// than the message budget is [ErrTooLarge].
	Submit(ctx context.Context, r Request) error
	// Pending lists the unanswered requests addressed to to ("" for every recipient), oldest
	// first.
	Pending(ctx context.Context, to string) ([]Request, error)
	// Resolve answers request id once: a second answer is [ErrResolved], an unknown id
	// [ErrNotFound]. The request leaves Pending.
	Resolve(ctx context.Context, id string, res Resolution) error
	// Resolution returns the answer to id: [ErrPending] before there is one, [ErrNotFound]
	// for an unknown id.
	Resolution(ctx context.Context, id string) (Resolution, error)
	// Watch signals whenever a request may have been submitted or resolved.
	Watch(ctx context.Context) (<-chan struct{}, error)
}
