// Package waittest is the one place tests get their time limits from. Tests that wait for a
// process to exit, a file to appear or an event to arrive poll or block under a deadline
// derived here, never a fixed sleep or a tight constant: CI runs on whatever machine the
// submitter has, often a loaded one. KEEL_TEST_TIMEOUT_SCALE (a positive number, default 1)
// multiplies every limit for slow machines.
package waittest

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"
)

// base is the default limit for one wait: generous, because it is only ever reached when
// something is wrong, and then the test fails anyway.
const base = 30 * time.Second

// pollInterval is how often Until checks its condition. Short, since a check is cheap and the
// wait ends as soon as the state holds.
const pollInterval = 5 * time.Millisecond

// Scale returns d multiplied by KEEL_TEST_TIMEOUT_SCALE.
func Scale(d time.Duration) time.Duration {
	s, err := strconv.ParseFloat(os.Getenv("KEEL_TEST_TIMEOUT_SCALE"), 64)
	if err != nil || s <= 0 {
		return d
	}
	return time.Duration(float64(d) * s)
}

// Timeout is the limit for one wait in a test: 30 s, scaled.
func Timeout() time.Duration { return Scale(base) }

// Context returns a context that ends at the test's end or after [Timeout], whichever comes
// first.
func Context(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), Timeout())
	t.Cleanup(cancel)
	return ctx
}

// Until polls cond until it holds, failing the test with what it waited for when [Timeout]
// passes first.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !Poll(Context(t), cond) {
		t.Fatalf("gave up after %v waiting for %s", Timeout(), what)
	}
}

// Poll checks cond until it holds (true) or ctx ends (false). For code outside a test's
// goroutine, or where the caller reports the failure itself.
func Poll(ctx context.Context, cond func() bool) bool {
	return PollEvery(ctx, pollInterval, cond)
}

// PollEvery is [Poll] checking every interval: for a benchmark that times how soon a state
// arrives, where the default interval would be the measurement's resolution.
func PollEvery(ctx context.Context, interval time.Duration, cond func() bool) bool {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if cond() {
			return true
		}
		select {
		case <-ctx.Done():
			return cond()
		case <-tick.C:
		}
	}
}

// Recv waits for a value on ch under [Timeout], failing the test with what it waited for.
func Recv[T any](t testing.TB, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-Context(t).Done():
		t.Fatalf("gave up after %v waiting for %s", Timeout(), what)
		panic("unreachable")
	}
}
