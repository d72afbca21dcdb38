package coord

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Entry is one record of a member's event log.
type Entry struct {
	// Seq orders one member's log: it grows with every entry (not necessarily by one).
	Seq uint64 `json:"seq"`
	// Time is when the entry was appended, by the appending handle's clock.
	Time time.Time       `json:"time"`
	Data json.RawMessage `json:"data"`
}

// Events holds one log per member of what its loop does — its events, for a lead in another
// process (on another host) to show the member's work as it happens. A log is a view, not a
// record (the member's transcript is that): it is bounded, keeping the newest
// [Limits.EventEntries] entries or fewer, and older entries are dropped without error.
type Events interface {
	// Append adds entries to member's log, in order. Each must be JSON ([ErrInvalid]) and
	// within the message budget ([ErrTooLarge]); then none of the call's entries is stored.
	Append(ctx context.Context, member string, data ...json.RawMessage) error
	// Read returns member's entries with Seq after after, oldest first, at most max of them
	// (0: all kept). A log never written is empty, not an error.
	Read(ctx context.Context, member string, after uint64, max int) ([]Entry, error)
	// Last returns the Seq of member's newest entry, 0 for a log never written: where a
	// follower that wants only what comes next starts.
	Last(ctx context.Context, member string) (uint64, error)
	// Watch signals whenever member's log may have grown.
	Watch(ctx context.Context, member string) (<-chan struct{}, error)
}

// EventLog is an optional ability of a [Backend]: members' event logs. Both keel backends
// have it; the conformance suite checks it where a backend offers it.
type EventLog interface {
	Events() Events
}

// CheckEntries reports entries no backend may store: ones that are not JSON, or larger than
// limits allow.
func CheckEntries(member string, data []json.RawMessage, limits Limits) error {
	if err := CheckName(member); err != nil {
		return err
	}
	for i, d := range data {
		if !json.Valid(d) {
			return fmt.Errorf("append event %d of %s: not JSON: %w", i, member, ErrInvalid)
		}
		if limits.MessageBytes > 0 && len(d) > limits.MessageBytes {
			return fmt.Errorf("append event %d of %s: %d bytes is over the %d-byte budget per entry: %w", i, member, len(d), limits.MessageBytes, ErrTooLarge)
		}
	}
	return nil
}
