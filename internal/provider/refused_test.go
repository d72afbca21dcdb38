package provider_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/provider"
)

// refusedLoopback is a real refused connection to a loopback port nothing listens on.
func refusedLoopback(t *testing.T) (addr string, err error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = "http://" + l.Addr().String() + "/v1/messages"
	l.Close()
	_, err = http.Post(addr, "application/json", strings.NewReader("{}"))
	if err == nil || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Skipf("the closed port did not refuse: %v", err)
	}
	return addr, err
}

func TestTransportErrorRefused(t *testing.T) {
	addr, err := refusedLoopback(t)
	re, ok := errors.AsType[*provider.RefusedError](provider.TransportError(err, "--base-url or X_BASE_URL"))
	if !ok || !re.Local || re.URL != addr || re.Error() != "connection refused to "+addr || !strings.Contains(re.Hint, "--base-url or X_BASE_URL") {
		t.Fatalf("loopback refusal classified as %#v", re)
	}
	remote := &url.Error{Op: "Post", URL: "https://models.example.com/v1/messages?beta=true", Err: &net.OpError{Op: "dial", Net: "tcp",
		Addr: &net.TCPAddr{IP: net.ParseIP("203.0.113.5"), Port: 443}, Err: syscall.ECONNREFUSED}}
	re, ok = errors.AsType[*provider.RefusedError](provider.TransportError(remote, "X"))
	if !ok || re.Local || re.URL != "https://models.example.com/v1/messages" {
		t.Errorf("remote refusal classified as %#v", re)
	}
	if !provider.IsRetryable(re) {
		t.Error("a refused connection is not retried")
	}
}

// A local address that refuses the connection fails after a few quick attempts, saying where
// it went and what to check; each retry says so too. A remote one gets the full patience.
func TestWithRetriesLocalRefusedFailsFast(t *testing.T) {
	addr, err := refusedLoopback(t)
	refused := provider.TransportError(err, "--base-url or ANTHROPIC_BASE_URL")
	synctest.Test(t, func(t *testing.T) {
		a := attempts{fail(refused)}
		p := provider.WithRetries(&a, provider.RetryPolicy{Jitter: func(time.Duration) time.Duration { return 0 }}, nil)
		start := time.Now()
		var retries []string
		var last error
		for ev, err := range p.Stream(t.Context(), &provider.Request{}) {
			if r, ok := ev.(provider.Retrying); ok {
				retries = append(retries, r.Err.Error())
				if r.MaxAttempts != 3 {
					t.Errorf("retry says %d attempts in all, want 3", r.MaxAttempts)
				}
			}
			if err != nil {
				last = err
			}
		}
		if waited := time.Since(start); waited != 1500*time.Millisecond {
			t.Errorf("gave up after %v, want 500ms + 1s", waited)
		}
		want := []string{"connection refused to " + addr, "connection refused to " + addr}
		if diff := cmp.Diff(want, retries); diff != "" {
			t.Errorf("retries mismatch (-want +got):\n%s", diff)
		}
		if last == nil || provider.IsRetryable(last) || !strings.Contains(last.Error(), "after 3 attempts") ||
			!strings.Contains(last.Error(), "nothing is listening there: start the model server, or check --base-url or ANTHROPIC_BASE_URL") {
			t.Errorf("final error %v", last)
		}
	})
	remote := &url.Error{Op: "Post", URL: "https://models.example.com/v1/messages", Err: &net.OpError{Op: "dial", Net: "tcp",
		Addr: &net.TCPAddr{IP: net.ParseIP("203.0.113.5"), Port: 443}, Err: syscall.ECONNREFUSED}}
	a := attempts{fail(provider.TransportError(remote, "X"))}
	n := 0
	p := provider.WithRetries(&a, provider.RetryPolicy{Sleep: func(_ context.Context, _ time.Duration) error { n++; return nil }}, nil)
	for range p.Stream(t.Context(), &provider.Request{}) {
	}
	if n != 9 {
		t.Errorf("a remote refusal waited %d times, want the default 9", n)
	}
}
