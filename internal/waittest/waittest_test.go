package waittest

import (
	"context"
	"testing"
	"time"
)

func TestScale(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want time.Duration
	}{
		{"", 30 * time.Second},
		{"2", 60 * time.Second},
		{"0.5", 15 * time.Second},
		{"0", 30 * time.Second},
		{"-3", 30 * time.Second},
		{"slow", 30 * time.Second},
	} {
		t.Setenv("KEEL_TEST_TIMEOUT_SCALE", tc.env)
		if got := Timeout(); got != tc.want {
			t.Errorf("KEEL_TEST_TIMEOUT_SCALE=%q: Timeout() = %v, want %v", tc.env, got, tc.want)
		}
	}
}

func TestPoll(t *testing.T) {
	n := 0
	if !Poll(Context(t), func() bool { n++; return n == 3 }) || n != 3 {
		t.Errorf("Poll stopped after %d checks, want true after 3", n)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if Poll(ctx, func() bool { return false }) {
		t.Error("Poll of a false condition under an ended context returned true")
	}
	// The last check after the context ended still counts: the state arrived in time.
	if !Poll(ctx, func() bool { return true }) {
		t.Error("Poll of a true condition returned false")
	}
}

func TestRecv(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	if got := Recv(t, "a value", ch); got != 7 {
		t.Errorf("Recv = %d, want 7", got)
	}
}

func TestContextEndsWithTheTest(t *testing.T) {
	var ctx context.Context
	t.Run("inner", func(t *testing.T) { ctx = Context(t) })
	if ctx.Err() == nil {
		t.Error("the context outlived its test")
	}
	if d, ok := Context(t).Deadline(); !ok || time.Until(d) > Timeout() {
		t.Errorf("deadline %v (%v), want within %v", d, ok, Timeout())
	}
}
