package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/goldentest"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/provider/anthropic"
)

func newProvider(t *testing.T, baseURL string) *anthropic.Provider {
	t.Helper()
	p, err := anthropic.New(anthropic.Options{APIKey: "sk-test", BaseURL: baseURL, Model: "claude-test"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// collect runs one stream and returns its events (Done included) and its error.
func collect(ctx context.Context, p provider.Provider, req *provider.Request) ([]provider.Event, error) {
	var evs []provider.Event
	for ev, err := range p.Stream(ctx, req) {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

func lastDone(t *testing.T, evs []provider.Event) provider.Done {
	t.Helper()
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	d, ok := evs[len(evs)-1].(provider.Done)
	if !ok {
		t.Fatalf("last event is %T, want Done", evs[len(evs)-1])
	}
	return d
}

func simpleRequest() *provider.Request {
	return &provider.Request{MaxTokens: 1024, Messages: []message.Message{message.User(message.Text("hi"))}}
}

func TestStreamAssemblesTextThinkingToolUseAndUsage(t *testing.T) {
	reply := message.Assistant(
		message.Block{Type: message.TypeThinking, Thinking: "Let me look at the file first.", Signature: "sig-abc=="},
		message.Block{Type: message.TypeRedactedThinking, Data: "EmwKAhgBEgy3va"},
		message.Text("I will read main.go."),
		message.ToolUse("toolu_01", "Read", json.RawMessage(`{"file_path":"main.go","limit":20}`)),
	)
	usage := message.Usage{InputTokens: 12, OutputTokens: 57, CacheCreationInputTokens: 300, CacheReadInputTokens: 4000}
	api := newFakeAPI(t, stream(sseFor(reply, message.StopToolUse, usage)))
	evs, err := collect(t.Context(), newProvider(t, api.URL), simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	want := provider.Done{Message: reply, StopReason: message.StopToolUse, Usage: usage, Model: "claude-test", RequestID: "req_test"}
	if diff := cmp.Diff(want, lastDone(t, evs)); diff != "" {
		t.Errorf("Done mismatch (-want +got):\n%s", diff)
	}

	// The deltas arrive as events before Done and add up to the same content.
	var text, thinking, input strings.Builder
	var starts []provider.ToolUseStart
	for _, ev := range evs {
		switch e := ev.(type) {
		case provider.TextDelta:
			text.WriteString(e.Text)
		case provider.ThinkingDelta:
			thinking.WriteString(e.Thinking)
		case provider.InputDelta:
			if e.Index != 3 {
				t.Errorf("input delta for block %d, want 3", e.Index)
			}
			input.WriteString(e.PartialJSON)
		case provider.ToolUseStart:
			starts = append(starts, e)
		}
	}
	if text.String() != "I will read main.go." || thinking.String() != "Let me look at the file first." {
		t.Errorf("deltas: text %q thinking %q", text.String(), thinking.String())
	}
	if diff := cmp.Diff([]provider.ToolUseStart{{Index: 3, ID: "toolu_01", Name: "Read"}}, starts); diff != "" {
		t.Errorf("tool starts mismatch (-want +got):\n%s", diff)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(input.String())); err != nil || compact.String() != `{"file_path":"main.go","limit":20}` {
		t.Errorf("input deltas join to %q (%v)", input.String(), err)
	}
}

// A message_delta that repeats input and cache counts replaces those of message_start; counts
// it leaves out are kept.
func TestUsageMerge(t *testing.T) {
	events := []sseEvent{
		{"message_start", `{"type":"message_start","message":{"id":"m","model":"claude-test","usage":{"input_tokens":10,"output_tokens":1,"cache_creation_input_tokens":20,"cache_read_input_tokens":30}}}`},
		{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}`},
		{"content_block_stop", `{"type":"content_block_stop","index":0}`},
		{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9,"cache_read_input_tokens":35}}`},
		{"message_stop", `{"type":"message_stop"}`},
	}
	api := newFakeAPI(t, stream(events))
	evs, err := collect(t.Context(), newProvider(t, api.URL), simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	want := message.Usage{InputTokens: 10, OutputTokens: 9, CacheCreationInputTokens: 20, CacheReadInputTokens: 35}
	if diff := cmp.Diff(want, lastDone(t, evs).Usage); diff != "" {
		t.Errorf("usage mismatch (-want +got):\n%s", diff)
	}
}

func TestRequestHeadersAndNoSDKRetry(t *testing.T) {
	api := newFakeAPI(t, status(http.StatusServiceUnavailable, "api_error", "down"))
	_, err := collect(t.Context(), newProvider(t, api.URL), simpleRequest())
	if err == nil {
		t.Fatal("want error")
	}
	if n := len(api.requests()); n != 1 {
		t.Errorf("the adapter made %d attempts; the SDK must not retry", n)
	}
	h := api.headers[0]
	if h.Get("Authorization") != "Bearer sk-test" && h.Get("X-Api-Key") != "sk-test" {
		t.Errorf("no credential header in %v", h)
	}
	if h.Get("Content-Type") != "application/json" || h.Get("Anthropic-Version") == "" {
		t.Errorf("headers: %v", h)
	}
}

func TestNewWithoutKeyNamesVariables(t *testing.T) {
	env := map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "ANTHROPIC_MODEL": "m"}
	opts := anthropic.FromEnv(func(k string) string { return env[k] })
	if opts.BaseURL != "http://127.0.0.1:9" || opts.Model != "m" {
		t.Errorf("FromEnv: %+v", opts)
	}
	_, err := anthropic.New(opts)
	if err == nil || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Fatalf("error %v does not name ANTHROPIC_API_KEY", err)
	}
	env["ANTHROPIC_API_KEY"] = "k"
	p, err := anthropic.New(anthropic.FromEnv(func(k string) string { return env[k] }))
	if err != nil || p.Model() != "m" {
		t.Fatalf("New from env: %v, model %q", err, p.Model())
	}
}

func TestErrorsSayWhatToFix(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer answer
		want   []string
		code   int
	}{
		{"401", status(401, "authentication_error", "invalid x-api-key"), []string{"401", "invalid x-api-key", "ANTHROPIC_API_KEY"}, 401},
		{"403", status(403, "permission_error", "no access"), []string{"403", "ANTHROPIC_API_KEY"}, 403},
		{"404", status(404, "not_found_error", "model: claude-nope"), []string{"404", "model", "ANTHROPIC_BASE_URL"}, 404},
		{"400", status(400, "invalid_request_error", "messages: text content blocks must be non-empty"), []string{"400", "text content blocks must be non-empty"}, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(t, tc.answer)
			p := provider.WithRetries(newProvider(t, api.URL), provider.RetryPolicy{Sleep: noSleep(t)}, nil)
			evs, err := collect(t.Context(), p, simpleRequest())
			if err == nil {
				t.Fatalf("no error; events %v", evs)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			se, ok := errors.AsType[*provider.StatusError](err)
			if !ok || se.StatusCode != tc.code || se.Retryable() {
				t.Errorf("error %#v: want a non-retryable StatusError %d", err, tc.code)
			}
			if n := len(api.requests()); n != 1 {
				t.Errorf("%d attempts, want 1 (no retry)", n)
			}
			if len(evs) != 0 {
				t.Errorf("events before a refused request: %v", evs)
			}
		})
	}
}

// sleeps records the waits a retry policy asked for without waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func noSleep(t *testing.T) func(context.Context, time.Duration) error {
	return func(context.Context, time.Duration) error {
		t.Error("unexpected retry")
		return nil
	}
}

func noJitter(time.Duration) time.Duration { return 0 }

func TestRetryOverloadedTwiceThenSuccess(t *testing.T) {
	reply := message.Assistant(message.Text("done"))
	api := newFakeAPI(t,
		status(529, "overloaded_error", "Overloaded"),
		status(529, "overloaded_error", "Overloaded"),
		stream(sseFor(reply, message.StopEndTurn, message.Usage{InputTokens: 3, OutputTokens: 1})))
	var s sleeps
	p := provider.WithRetries(newProvider(t, api.URL), provider.RetryPolicy{Sleep: s.sleep, Jitter: noJitter}, nil)
	evs, err := collect(t.Context(), p, simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(api.requests()); n != 3 {
		t.Errorf("%d HTTP attempts, want 3", n)
	}
	var retries []int
	for _, ev := range evs {
		if r, ok := ev.(provider.Retrying); ok {
			retries = append(retries, r.Attempt)
		}
	}
	if diff := cmp.Diff([]int{1, 2}, retries); diff != "" {
		t.Errorf("Retrying attempts mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]time.Duration{500 * time.Millisecond, time.Second}, s.d); diff != "" {
		t.Errorf("delays mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(reply, lastDone(t, evs).Message); diff != "" {
		t.Errorf("message mismatch (-want +got):\n%s", diff)
	}
	// Every attempt sends the same bytes.
	bodies := api.requests()
	if !bytes.Equal(bodies[0], bodies[2]) {
		t.Errorf("retried body differs:\n%s\n%s", bodies[0], bodies[2])
	}
}

func TestRetryHonoursRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header []string
		want   time.Duration
	}{
		{"seconds", []string{"retry-after", "7"}, 7 * time.Second},
		{"ms", []string{"retry-after-ms", "1500", "retry-after", "9"}, 1500 * time.Millisecond},
		{"date", []string{"retry-after", "Sun, 06 Nov 1994 08:49:47 GMT"}, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(t,
				status(429, "rate_limit_error", "slow down", tc.header...),
				stream(sseFor(message.Assistant(message.Text("ok")), message.StopEndTurn, message.Usage{})))
			inner, err := anthropic.New(anthropic.Options{APIKey: "k", BaseURL: api.URL, Model: "m",
				Now: func() time.Time { return time.Date(1994, 11, 6, 8, 49, 37, 0, time.UTC) }})
			if err != nil {
				t.Fatal(err)
			}
			var s sleeps
			p := provider.WithRetries(inner, provider.RetryPolicy{Sleep: s.sleep, Jitter: noJitter}, nil)
			if _, err := collect(t.Context(), p, simpleRequest()); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]time.Duration{tc.want}, s.d); diff != "" {
				t.Errorf("delays mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRetryDropMidStreamDiscardsPartial(t *testing.T) {
	first := sseFor(message.Assistant(message.Text("partial answer that is lost"),
		message.ToolUse("toolu_x", "Bash", json.RawMessage(`{"command":"rm -rf build"}`))), message.StopToolUse, message.Usage{})
	second := message.Assistant(message.Text("second try"), message.ToolUse("toolu_y", "Read", json.RawMessage(`{"file_path":"a"}`)))
	api := newFakeAPI(t, dropAfter(first, 7), stream(sseFor(second, message.StopToolUse, message.Usage{OutputTokens: 5})))
	var s sleeps
	p := provider.WithRetries(newProvider(t, api.URL), provider.RetryPolicy{Sleep: s.sleep, Jitter: noJitter}, nil)
	evs, err := collect(t.Context(), p, simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(api.requests()); n != 2 {
		t.Errorf("%d attempts, want 2", n)
	}
	// The consumer's view: reset on Retrying, so only the second attempt's deltas remain.
	var text strings.Builder
	var sawPartial, sawRetry bool
	for _, ev := range evs {
		switch e := ev.(type) {
		case provider.TextDelta:
			text.WriteString(e.Text)
			sawPartial = sawPartial || !sawRetry
		case provider.Retrying:
			sawRetry = true
			text.Reset()
			if !provider.IsRetryable(e.Err) {
				t.Errorf("Retrying carries a non-retryable error %v", e.Err)
			}
		}
	}
	if !sawPartial || !sawRetry {
		t.Fatalf("want partial deltas then Retrying; partial %v retry %v", sawPartial, sawRetry)
	}
	if text.String() != "second try" {
		t.Errorf("text after reset %q", text.String())
	}
	if diff := cmp.Diff(second, lastDone(t, evs).Message); diff != "" {
		t.Errorf("Done mismatch (-want +got):\n%s", diff)
	}
}

// A stream that ends cleanly but without message_stop is as incomplete as a dropped one.
func TestStreamWithoutMessageStopIsIncomplete(t *testing.T) {
	ev := sseFor(message.Assistant(message.Text("cut")), message.StopEndTurn, message.Usage{})
	api := newFakeAPI(t, stream(ev[:len(ev)-1]))
	_, err := collect(t.Context(), newProvider(t, api.URL), simpleRequest())
	if !errors.Is(err, provider.ErrStreamIncomplete) || !provider.IsRetryable(err) {
		t.Fatalf("error %v: want retryable ErrStreamIncomplete", err)
	}
}

func TestOverloadedErrorEventMidStreamIsRetried(t *testing.T) {
	ev := sseFor(message.Assistant(message.Text("x")), message.StopEndTurn, message.Usage{})
	api := newFakeAPI(t, stream(append(ev[:3:3], sseEvent{"error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`})))
	_, err := collect(t.Context(), newProvider(t, api.URL), simpleRequest())
	se, ok := errors.AsType[*provider.StatusError](err)
	if !ok || se.StatusCode != 529 || !se.Retryable() {
		t.Fatalf("error %v: want retryable 529", err)
	}
}

// A loopback address nothing listens on fails after a few quick attempts, naming the address
// and the setting to check.
func TestUnreachableBaseURLSaysHowManyAttempts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var s sleeps
	p := provider.WithRetries(newProvider(t, "http://"+addr), provider.RetryPolicy{Sleep: s.sleep, Jitter: noJitter}, nil)
	_, err = collect(t.Context(), p, simpleRequest())
	if err == nil || !strings.Contains(err.Error(), "after 3 attempts") ||
		!strings.Contains(err.Error(), "connection refused to http://"+addr+"/v1/messages") || !strings.Contains(err.Error(), "ANTHROPIC_BASE_URL") {
		t.Fatalf("error %v: want 'after 3 attempts: … connection refused to http://%s/v1/messages; … ANTHROPIC_BASE_URL'", err, addr)
	}
	want := []time.Duration{500 * time.Millisecond, time.Second}
	if diff := cmp.Diff(want, s.d); diff != "" {
		t.Errorf("delays mismatch (-want +got):\n%s", diff)
	}
}

func TestCancelledContextIsNotRetried(t *testing.T) {
	api := newFakeAPI(t, status(529, "overloaded_error", "Overloaded"))
	ctx, cancel := context.WithCancel(t.Context())
	p := provider.WithRetries(newProvider(t, api.URL), provider.RetryPolicy{
		Sleep: func(ctx context.Context, d time.Duration) error {
			cancel()
			<-ctx.Done()
			return context.Cause(ctx)
		}}, nil)
	_, err := collect(ctx, p, simpleRequest())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v: want context.Canceled", err)
	}
	if n := len(api.requests()); n != 1 {
		t.Errorf("%d attempts after cancel, want 1", n)
	}
}

func goldenCompare(t *testing.T, name string, got []byte) {
	t.Helper()
	goldentest.Check(t, name, got)
}
