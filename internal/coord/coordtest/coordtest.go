// Package coordtest is the conformance suite every [coord.Backend] must pass: atomic claims
// under contention, lost races visible, blocked and completed tasks refused, completion
// unblocking dependents, lapsed leases re-claimable, mailbox order, ack, redelivery and
// deduplication by id, size budgets, permission requests, records with watches, and members'
// event logs (where a backend has them: [coord.EventLog]).
//
// A backend's test calls [Run] with a function that makes a fresh, empty store and returns
// how to open handles on it; every handle stands for another process on the same storage.
package coordtest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/waittest"
)

// Open returns a new handle on one store. The suite closes what it opens.
type Open func(t *testing.T, cfg coord.Config) coord.Backend

// Run runs the whole suite. newStore is called once per subtest.
func Run(t *testing.T, newStore func(t *testing.T) Open) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s *store)
	}{
		{"board/create-get-list", testCreateGetList},
		{"board/update", testUpdate},
		{"board/dependencies", testDependencies},
		{"board/cycles", testCycles},
		{"board/delete", testDelete},
		{"board/claim", testClaim},
		{"board/claim-refusals", testClaimRefusals},
		{"board/completion-unblocks", testCompletionUnblocks},
		{"board/lease-lapse", testLeaseLapse},
		{"board/release", testRelease},
		{"board/release-backoff", testReleaseBackoff},
		{"board/claim-next-order", testClaimNextOrder},
		{"board/contention-one-task", testContentionOneTask},
		{"board/contention-claim-next", testContentionClaimNext},
		{"board/watch", testBoardWatch},
		{"mailbox/order-ack", testMailOrderAck},
		{"mailbox/redelivery", testMailRedelivery},
		{"mailbox/dedup", testMailDedup},
		{"mailbox/budgets", testMailBudgets},
		{"mailbox/concurrent-senders", testMailConcurrent},
		{"mailbox/watch", testMailWatch},
		{"mailbox/invalid", testMailInvalid},
		{"requests/resolve", testRequests},
		{"requests/watch", testRequestsWatch},
		{"records/crud", testRecords},
		{"records/cas", testRecordsCAS},
		{"records/watch", testRecordsWatch},
		{"records/invalid-keys", testRecordsInvalid},
		{"events/append-read", testEventsAppendRead},
		{"events/follow", testEventsFollow},
		{"events/bound", testEventsBound},
		{"events/watch", testEventsWatch},
		{"events/invalid", testEventsInvalid},
		{"close", testClose},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := &store{open: newStore(t), clock: NewClock()}
			tc.fn(t, s)
		})
	}
}

// store opens handles that share one fake clock.
type store struct {
	open  Open
	clock *Clock
}

func (s *store) handle(t *testing.T) coord.Backend {
	return s.handleWith(t, coord.Config{})
}

func (s *store) handleWith(t *testing.T, cfg coord.Config) coord.Backend {
	t.Helper()
	cfg.Now = s.clock.Now
	b := s.open(t, cfg)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// Clock is a fake clock that moves only when told.
type Clock struct {
	// mu guards now.
	mu  sync.Mutex
	now time.Time
}

// NewClock starts a clock at a fixed instant.
func NewClock() *Clock { return &Clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func ctxOf(t *testing.T) context.Context { return waittest.Context(t) }

func must[T any](t *testing.T, what string) func(v T, err error) T {
	t.Helper()
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want one wrapping %v", what, err, target)
	}
	if err.Error() == target.Error() {
		t.Errorf("%s: error %q says only what went wrong, not why", what, err)
	}
}

// signalled waits for a signal on ch; a closed channel fails the test.
func signalled(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	ctx := waittest.Context(t)
	select {
	case _, ok := <-ch:
		if !ok {
			t.Fatalf("%s: the watch channel closed", what)
		}
	case <-ctx.Done():
		t.Fatalf("gave up after %v waiting for %s", waittest.Timeout(), what)
	}
}
