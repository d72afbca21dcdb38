package coord

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/keel-dev/keel/internal/lazy"
)

// Record is one keyed value with a revision: a member's state and heartbeat, the team's
// configuration.
type Record struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
	// Revision increases with every write of the key; it starts at 1.
	Revision uint64    `json:"revision"`
	Updated  time.Time `json:"updated"`
}

// Records is a small key-value store with compare-and-set and watches. Keys are segments of
// letters, digits and _ = . - separated by "/" ("members/alice").
type Records interface {
	// Put writes value unconditionally and returns the new revision. Values must be JSON
	// ([ErrInvalid] otherwise).
	Put(ctx context.Context, key string, value json.RawMessage) (uint64, error)
	// Create writes value only if key does not exist ([ErrExists]).
	Create(ctx context.Context, key string, value json.RawMessage) (uint64, error)
	// Update writes value only if key's revision is still rev ([ErrConflict]; [ErrNotFound]
	// when it does not exist).
	Update(ctx context.Context, key string, value json.RawMessage, rev uint64) (uint64, error)
	// Get returns the record ([ErrNotFound]).
	Get(ctx context.Context, key string) (Record, error)
	// List returns the records whose key starts with prefix, in key order.
	List(ctx context.Context, prefix string) ([]Record, error)
	// Delete removes key; deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// Watch signals whenever a record under prefix may have changed.
	Watch(ctx context.Context, prefix string) (<-chan struct{}, error)
}

// keyRE is compiled on first use, like nameRE: most keel processes never check a key.
var keyRE = lazy.Regexp{Expr: `^[A-Za-z0-9_=-][A-Za-z0-9_=.-]*(/[A-Za-z0-9_=-][A-Za-z0-9_=.-]*)*$`}

// CheckKey reports a record key a backend must refuse.
func CheckKey(key string) error {
	if !keyRE.Get().MatchString(key) {
		return fmt.Errorf("record key %q: want segments of letters, digits and _ = . - separated by /: %w", key, ErrInvalid)
	}
	return nil
}

// nameRE is compiled on first use: a counted repetition compiles to a program of thousands
// of instructions, which every keel process paid at start (most never check an id).
var nameRE = lazy.Regexp{Expr: `^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`}

// CheckName reports a member or inbox name a backend must refuse: names are 1–64 letters,
// digits, _ and -, starting with a letter or digit, so they are safe as file names, NATS
// subjects and record keys.
func CheckName(name string) error {
	if !nameRE.Get().MatchString(name) {
		return fmt.Errorf("member name %q: want 1-64 letters, digits, _ and -, starting with a letter or digit: %w", name, ErrInvalid)
	}
	return nil
}
