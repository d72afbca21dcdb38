package anthropic_test

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/provider/anthropic"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

// TestMalformedEventIsRetried: a junk message_start, or an event out of sequence, is a broken
// stream like a dropped one: the request is sent again and the second answer is used.
func TestMalformedEventIsRetried(t *testing.T) {
	ok := sseFor(message.Assistant(message.Text("done")), message.StopEndTurn, message.Usage{})
	for _, tc := range []struct {
		name string
		bad  []sseEvent
	}{
		{"junk message_start", []sseEvent{{"message_start", `{"type":"message_start","message":{"id":`}}},
		{"delta before its block", append(ok[:2:2], sseEvent{"content_block_delta", `{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}`})},
		{"block before message_start", ok[2:]},
		{"second message_start", append(ok[:2:2], ok[0])},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(t, stream(tc.bad), stream(ok))
			var s sleeps
			p := provider.WithRetries(newProvider(t, api.URL), provider.RetryPolicy{Sleep: s.sleep, Jitter: noJitter}, nil)
			evs, err := collect(t.Context(), p, simpleRequest())
			if err != nil {
				t.Fatalf("not retried: %v", err)
			}
			if got := lastDone(t, evs).Message.TextOf(); got != "done" || len(api.requests()) != 2 {
				t.Errorf("got %q after %d attempts", got, len(api.requests()))
			}
			var retried error
			for _, ev := range evs {
				if r, ok := ev.(provider.Retrying); ok {
					retried = r.Err
				}
			}
			if !errors.Is(retried, provider.ErrMalformedStream) {
				t.Errorf("retry reason %v, want a malformed stream", retried)
			}
		})
	}
}

// TestCorruptStreamFromScriptedModel: the same against the scripted model's corrupt fault.
func TestCorruptStreamFromScriptedModel(t *testing.T) {
	srv, err := scripted.Start(t.Context(), "", &scripted.Scenario{Rules: []scripted.Rule{
		{Times: 1, Reply: []scripted.Block{scripted.Text("x")}, Fault: &scripted.Fault{Corrupt: 1}},
		{Reply: []scripted.Block{scripted.Text("clean")}},
	}}, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var s sleeps
	p := provider.WithRetries(newProvider(t, srv.URL()), provider.RetryPolicy{Sleep: s.sleep, Jitter: noJitter}, nil)
	evs, err := collect(t.Context(), p, simpleRequest())
	if err != nil || lastDone(t, evs).Message.TextOf() != "clean" {
		t.Fatalf("err %v", err)
	}
}

// roundTrip is an http.RoundTripper from a function.
type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestPermanentFailuresAreNotRetried: a host that does not resolve, a scheme no client
// speaks, a certificate that does not verify: one attempt, and a message naming what to fix.
func TestPermanentFailuresAreNotRetried(t *testing.T) {
	dns := &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "api.anthropc.com", IsNotFound: true}}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"dns", dns, "host name does not resolve; check --base-url or ANTHROPIC_BASE_URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attempts := 0
			client := &http.Client{Transport: roundTrip(func(*http.Request) (*http.Response, error) {
				attempts++
				return nil, tc.err
			})}
			ap, err := anthropic.New(anthropic.Options{APIKey: "k", BaseURL: "https://api.anthropc.com", HTTPClient: client})
			if err != nil {
				t.Fatal(err)
			}
			var s sleeps
			p := provider.WithRetries(ap, provider.RetryPolicy{Sleep: s.sleep}, nil)
			start := time.Now()
			_, err = collect(t.Context(), p, simpleRequest())
			if err == nil || !strings.Contains(err.Error(), tc.want) || attempts != 1 || len(s.d) != 0 {
				t.Errorf("err %v after %d attempts (%v)", err, attempts, time.Since(start))
			}
		})
	}
}

// TestBaseURLIsCheckedBeforeAnyRequest: a base URL no request can reach is refused at once.
func TestBaseURLIsCheckedBeforeAnyRequest(t *testing.T) {
	for _, raw := range []string{"ftp://example.com", "example.com/v1", "http://"} {
		_, err := anthropic.New(anthropic.Options{APIKey: "k", BaseURL: raw})
		if err == nil || !strings.Contains(err.Error(), "ANTHROPIC_BASE_URL") {
			t.Errorf("New(%q) = %v, want an error naming ANTHROPIC_BASE_URL", raw, err)
		}
	}
}
