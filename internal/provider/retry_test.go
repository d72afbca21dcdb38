package provider_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{"none", nil, 0, false},
		{"seconds", map[string]string{"retry-after": "3"}, 3 * time.Second, true},
		{"fractional", map[string]string{"retry-after": "1.5"}, 1500 * time.Millisecond, true},
		{"ms wins", map[string]string{"retry-after-ms": "250", "retry-after": "9"}, 250 * time.Millisecond, true},
		{"date", map[string]string{"retry-after": now.Add(42 * time.Second).Format(http.TimeFormat)}, 42 * time.Second, true},
		{"past date", map[string]string{"retry-after": now.Add(-time.Hour).Format(http.TimeFormat)}, 0, true},
		{"garbage", map[string]string{"retry-after": "soon"}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			got, ok := provider.ParseRetryAfter(h, now)
			if got != tc.want || ok != tc.ok {
				t.Errorf("got %v %v, want %v %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestIsRetryable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&provider.StatusError{StatusCode: 408}, true},
		{&provider.StatusError{StatusCode: 409}, true},
		{&provider.StatusError{StatusCode: 429}, true},
		{&provider.StatusError{StatusCode: 500}, true},
		{&provider.StatusError{StatusCode: 529}, true},
		{&provider.StatusError{StatusCode: 400}, false},
		{&provider.StatusError{StatusCode: 401}, false},
		{&provider.StatusError{StatusCode: 403}, false},
		{&provider.StatusError{StatusCode: 404}, false},
		{&provider.StatusError{StatusCode: 401, ShouldRetry: new(true)}, false},
		{&provider.StatusError{StatusCode: 503, ShouldRetry: new(false)}, false},
		{&provider.StatusError{StatusCode: 422, ShouldRetry: new(true)}, true},
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), true},
		{fmt.Errorf("x: %w", provider.ErrStreamIncomplete), true},
		{fmt.Errorf("x: %w: decode", provider.ErrMalformedStream), true},
		{&url.Error{Op: "Post", URL: "ftp://h", Err: errors.New(`unsupported protocol scheme "ftp"`)}, false},
		{&url.Error{Op: "Post", URL: "http://h", Err: &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "h", IsNotFound: true}}}, false},
		{&url.Error{Op: "Post", URL: "http://h", Err: &net.OpError{Op: "dial", Err: &net.DNSError{Err: "timeout", Name: "h", IsTimeout: true}}}, true},
		{&url.Error{Op: "Post", URL: "https://h", Err: x509.UnknownAuthorityError{}}, false},
		{&provider.PermanentError{Err: errors.New("x"), Hint: "fix"}, false},
		{fmt.Errorf("x: %w", context.Canceled), false},
		{errors.New("encode request: no model given"), false},
	} {
		if got := provider.IsRetryable(tc.err); got != tc.want {
			t.Errorf("IsRetryable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestDelay(t *testing.T) {
	p := provider.RetryPolicy{Jitter: func(time.Duration) time.Duration { return 0 }}
	var got []time.Duration
	for a := 1; a <= 10; a++ {
		got = append(got, p.Delay(a, io.ErrUnexpectedEOF))
	}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
		16 * time.Second, 32 * time.Second, 32 * time.Second, 32 * time.Second, 32 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("delays mismatch (-want +got):\n%s", diff)
	}
	if d := p.Delay(3, &provider.StatusError{StatusCode: 429, After: 11 * time.Second}); d != 11*time.Second {
		t.Errorf("retry-after ignored: %v", d)
	}
	// Default jitter takes at most a quarter off.
	for range 100 {
		if d := (provider.RetryPolicy{}).Delay(2, io.EOF); d > time.Second || d < 750*time.Millisecond {
			t.Fatalf("jittered delay %v outside [750ms, 1s]", d)
		}
	}
}

// attempts is a Provider whose n-th attempt is scripted; the adapters' tests drive the wrapper
// over real HTTP, this one checks the wrapper's own timing and context handling.
type attempts []func(yield func(provider.Event, error) bool)

func (a *attempts) Stream(context.Context, *provider.Request) iter.Seq2[provider.Event, error] {
	next := (*a)[0]
	if len(*a) > 1 {
		*a = (*a)[1:]
	}
	return next
}

func fail(err error) func(func(provider.Event, error) bool) {
	return func(yield func(provider.Event, error) bool) {
		if yield(provider.TextDelta{Text: "part"}, nil) {
			yield(nil, err)
		}
	}
}

func TestWithRetriesWaitsOnRealTimers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		done := func(yield func(provider.Event, error) bool) {
			yield(provider.Done{Message: message.Assistant(message.Text("ok"))}, nil)
		}
		a := attempts{fail(io.ErrUnexpectedEOF), fail(&provider.StatusError{StatusCode: 429, After: 5 * time.Second}), done}
		p := provider.WithRetries(&a, provider.RetryPolicy{Jitter: func(time.Duration) time.Duration { return 0 }}, nil)
		start := time.Now()
		var kinds []string
		for ev, err := range p.Stream(t.Context(), &provider.Request{}) {
			if err != nil {
				t.Fatal(err)
			}
			kinds = append(kinds, fmt.Sprintf("%T", ev))
		}
		if got := time.Since(start); got != 5500*time.Millisecond {
			t.Errorf("waited %v, want 500ms + 5s", got)
		}
		want := []string{"provider.TextDelta", "provider.Retrying", "provider.TextDelta", "provider.Retrying", "provider.Done"}
		if diff := cmp.Diff(want, kinds); diff != "" {
			t.Errorf("events mismatch (-want +got):\n%s", diff)
		}
	})
}

func TestWithRetriesStopsWhenContextEndsDuringWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := attempts{fail(io.ErrUnexpectedEOF)}
		p := provider.WithRetries(&a, provider.RetryPolicy{}, nil)
		ctx, cancel := context.WithCancelCause(t.Context())
		go func() {
			synctest.Wait() // until the stream blocks: in the wait before the second attempt
			cancel(errors.New("interrupted by user"))
		}()
		start := time.Now()
		var err error
		retries := 0
		for ev, e := range p.Stream(ctx, &provider.Request{}) {
			if e != nil {
				err = e
			}
			if _, ok := ev.(provider.Retrying); ok {
				retries++
			}
		}
		if err == nil || !strings.Contains(err.Error(), "interrupted by user") {
			t.Fatalf("error %v: want the cancel cause", err)
		}
		if waited := time.Since(start); waited != 0 || retries != 1 {
			t.Errorf("stopped after %v and %d retries, want at once, in the first wait", waited, retries)
		}
	})
}

func TestWithRetriesGivesUpAfterMaxAttempts(t *testing.T) {
	a := attempts{fail(io.ErrUnexpectedEOF)}
	var n int
	p := provider.WithRetries(&a, provider.RetryPolicy{MaxAttempts: 3,
		Sleep: func(context.Context, time.Duration) error { n++; return nil }}, nil)
	var err error
	for _, e := range p.Stream(t.Context(), &provider.Request{}) {
		if e != nil {
			err = e
		}
	}
	if err == nil || !strings.HasPrefix(err.Error(), "after 3 attempts: ") || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("error %v", err)
	}
	if n != 2 {
		t.Errorf("%d waits, want 2", n)
	}
}

func TestWithRetriesPassesNonRetryableThrough(t *testing.T) {
	a := attempts{fail(&provider.StatusError{Provider: "x", StatusCode: 401, Hint: "check KEY"})}
	p := provider.WithRetries(&a, provider.RetryPolicy{Sleep: func(context.Context, time.Duration) error {
		t.Error("slept for a 401")
		return nil
	}}, nil)
	var err error
	for _, e := range p.Stream(t.Context(), &provider.Request{}) {
		if e != nil {
			err = e
		}
	}
	if err == nil || !strings.Contains(err.Error(), "check KEY") || strings.Contains(err.Error(), "attempts") {
		t.Fatalf("error %v", err)
	}
}
