package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/provider/openai"
)

var update = flag.Bool("update", false, "rewrite golden files")

// fakeAPI is a tiny chat-completions server on 127.0.0.1 that records bodies and answers the
// n-th request with answers[n] (the last repeats).
type fakeAPI struct {
	*httptest.Server

	// mu guards bodies and headers.
	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
	answers []answer
}

type answer func(w http.ResponseWriter)

func newFakeAPI(t *testing.T, answers ...answer) *fakeAPI {
	t.Helper()
	f := &fakeAPI{answers: answers}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		n := len(f.bodies)
		f.bodies = append(f.bodies, body)
		f.headers = append(f.headers, r.Header.Clone())
		f.mu.Unlock()
		if r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "404 page not found", http.StatusNotFound)
			return
		}
		f.answers[min(n, len(f.answers)-1)](w)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAPI) requests() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.bodies...)
}

// chunks answers with the given data payloads as SSE, then [DONE] unless drop is set, in which
// case the connection is cut instead.
func chunks(drop bool, data ...string) answer {
	return func(w http.ResponseWriter) {
		w.Header().Set("content-type", "text/event-stream")
		w.Header().Set("x-request-id", "req_oa")
		w.WriteHeader(http.StatusOK)
		fl := w.(http.Flusher)
		for _, d := range data {
			fmt.Fprintf(w, "data: %s\n\n", d)
			fl.Flush()
		}
		if drop {
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
}

func status(code int, body string) answer {
	return func(w http.ResponseWriter) {
		w.Header().Set("content-type", "application/json")
		w.WriteHeader(code)
		fmt.Fprint(w, body)
	}
}

func newProvider(t *testing.T, baseURL string) *openai.Provider {
	t.Helper()
	p, err := openai.New(openai.Options{APIKey: "sk-oa", BaseURL: baseURL + "/v1", Model: "gpt-test"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

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
	return &provider.Request{MaxTokens: 100, Messages: []message.Message{message.User(message.Text("hi"))}}
}

// toolCallChunks is a stream with text, then two tool calls whose arguments arrive in
// fragments interleaved by index, then usage with cached tokens.
var toolCallChunks = []string{
	`{"id":"c1","object":"chat.completion.chunk","model":"gpt-test","choices":[{"index":0,"delta":{"role":"assistant","content":"Reading "},"finish_reason":null}]}`,
	`{"id":"c1","model":"gpt-test","choices":[{"index":0,"delta":{"content":"both."},"finish_reason":null}]}`,
	`{"id":"c1","model":"gpt-test","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"Read","arguments":""}}]},"finish_reason":null}]}`,
	`{"id":"c1","model":"gpt-test","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"file_path\": "}}]},"finish_reason":null}]}`,
	`{"id":"c1","model":"gpt-test","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"Bash","arguments":"{\"command\""}}]},"finish_reason":null}]}`,
	`{"id":"c1","model":"gpt-test","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"a.go\"}"}}]},"finish_reason":null}]}`,
	`{"id":"c1","model":"gpt-test","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":":\"ls\"}"}}]},"finish_reason":null}]}`,
	`{"id":"c1","model":"gpt-test","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
	`{"id":"c1","model":"gpt-test","choices":[],"usage":{"prompt_tokens":1200,"completion_tokens":42,"total_tokens":1242,"prompt_tokens_details":{"cached_tokens":1024}}}`,
}

func TestStreamToolCallsAndCachedUsage(t *testing.T) {
	api := newFakeAPI(t, chunks(false, toolCallChunks...))
	evs, err := collect(t.Context(), newProvider(t, api.URL), simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	want := provider.Done{
		Message: message.Assistant(message.Text("Reading both."),
			message.ToolUse("call_a", "Read", json.RawMessage(`{"file_path":"a.go"}`)),
			message.ToolUse("call_b", "Bash", json.RawMessage(`{"command":"ls"}`))),
		StopReason: message.StopToolUse,
		Usage:      message.Usage{InputTokens: 176, OutputTokens: 42, CacheReadInputTokens: 1024},
		Model:      "gpt-test",
		RequestID:  "req_oa",
	}
	if diff := cmp.Diff(want, lastDone(t, evs)); diff != "" {
		t.Errorf("Done mismatch (-want +got):\n%s", diff)
	}
	wantEvents := []provider.Event{
		provider.TextDelta{Index: 0, Text: "Reading "},
		provider.TextDelta{Index: 0, Text: "both."},
		provider.ToolUseStart{Index: 1, ID: "call_a", Name: "Read"},
		provider.InputDelta{Index: 1, PartialJSON: `{"file_path": `},
		provider.ToolUseStart{Index: 2, ID: "call_b", Name: "Bash"},
		provider.InputDelta{Index: 2, PartialJSON: `{"command"`},
		provider.InputDelta{Index: 1, PartialJSON: `"a.go"}`},
		provider.InputDelta{Index: 2, PartialJSON: `:"ls"}`},
	}
	if diff := cmp.Diff(wantEvents, evs[:len(evs)-1]); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
	if h := api.headers[0]; h.Get("Authorization") != "Bearer sk-oa" {
		t.Errorf("authorization header %q", h.Get("Authorization"))
	}
}

func TestNoKey(t *testing.T) {
	env := map[string]string{}
	if _, err := openai.New(openai.FromEnv(func(k string) string { return env[k] })); err == nil ||
		!strings.Contains(err.Error(), "OPENAI_API_KEY") || !strings.Contains(err.Error(), "OPENAI_BASE_URL") {
		t.Fatalf("error %v: want one naming OPENAI_API_KEY and OPENAI_BASE_URL", err)
	}
	// A local server needs no key; a placeholder is sent.
	api := newFakeAPI(t, chunks(false, `{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`))
	env["OPENAI_BASE_URL"] = api.URL + "/v1"
	p, err := openai.New(openai.FromEnv(func(k string) string { return env[k] }))
	if err != nil {
		t.Fatal(err)
	}
	req := simpleRequest()
	req.Model = "llama3"
	evs, err := collect(t.Context(), p, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := lastDone(t, evs); got.Message.TextOf() != "hi" || got.StopReason != message.StopEndTurn {
		t.Errorf("Done %+v", got)
	}
	if h := api.headers[0].Get("Authorization"); h != "Bearer keel-no-key" {
		t.Errorf("authorization %q, want the placeholder", h)
	}
}

func TestErrorsSayWhatToFix(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer answer
		path   string
		want   []string
	}{
		{"401", status(401, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`), "/v1",
			[]string{"401", "Incorrect API key", "OPENAI_API_KEY"}},
		{"404 model", status(404, `{"error":{"message":"model \"nope\" not found","type":"not_found_error"}}`), "/v1",
			[]string{"404", "not found", "--model", "--base-url"}},
		{"404 wrong base URL", nil, "/wrong", []string{"404", "--base-url"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(t, tc.answer)
			inner, err := openai.New(openai.Options{APIKey: "k", BaseURL: api.URL + tc.path, Model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			p := provider.WithRetries(inner, provider.RetryPolicy{Sleep: func(context.Context, time.Duration) error {
				t.Error("retried")
				return nil
			}}, nil)
			_, err = collect(t.Context(), p, simpleRequest())
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if n := len(api.requests()); n != 1 {
				t.Errorf("%d attempts, want 1", n)
			}
		})
	}
}

func TestRetryDropMidStreamThenSuccess(t *testing.T) {
	api := newFakeAPI(t,
		chunks(true, toolCallChunks[:4]...),
		status(503, `{"error":{"message":"busy","type":"server_error"}}`),
		chunks(false, `{"choices":[{"index":0,"delta":{"content":"fresh"},"finish_reason":"stop"}]}`))
	var delays []time.Duration
	p := provider.WithRetries(newProvider(t, api.URL), provider.RetryPolicy{
		Jitter: func(time.Duration) time.Duration { return 0 },
		Sleep:  func(_ context.Context, d time.Duration) error { delays = append(delays, d); return nil }}, nil)
	evs, err := collect(t.Context(), p, simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(api.requests()); n != 3 {
		t.Errorf("%d attempts, want 3", n)
	}
	var retried []error
	for _, ev := range evs {
		if r, ok := ev.(provider.Retrying); ok {
			retried = append(retried, r.Err)
		}
	}
	if len(retried) != 2 || !errors.Is(retried[0], provider.ErrStreamIncomplete) && !errors.Is(retried[0], io.ErrUnexpectedEOF) {
		t.Errorf("Retrying errors %v", retried)
	}
	if diff := cmp.Diff(message.Assistant(message.Text("fresh")), lastDone(t, evs).Message); diff != "" {
		t.Errorf("Done mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]time.Duration{500 * time.Millisecond, time.Second}, delays); diff != "" {
		t.Errorf("delays mismatch (-want +got):\n%s", diff)
	}
}

// TestGoldenConversion pins the body for a conversation with every block kind keel has.
func TestGoldenConversion(t *testing.T) {
	png := &message.ImageSource{Type: "base64", MediaType: "image/png", Data: "iVBORw0KGgo="}
	req := &provider.Request{
		Model:     "qwen3-coder",
		MaxTokens: 4096,
		System: []provider.SystemBlock{
			{Text: "You are keel <agent> & friend.", CacheControl: &message.CacheControl{Type: "ephemeral"}},
			{Text: "cwd: ./ws"},
		},
		Tools: []provider.ToolSpec{{Name: "Read", Description: "Read a file.",
			InputSchema: json.RawMessage(`{"type": "object", "properties": {"file_path": {"type": "string"}}}`)}},
		Messages: []message.Message{
			message.User(message.Text("what is in a.go?"), message.Block{Type: message.TypeImage, Source: png}),
			message.Assistant(
				message.Block{Type: message.TypeThinking, Thinking: "dropped", Signature: "s"},
				message.Text("Let me look."),
				message.ToolUse("call_1", "Read", json.RawMessage(`{"file_path":"a.go"}`)),
				message.ToolUse("call_2", "Read", json.RawMessage(`{"file_path":"b.go"}`))),
			message.User(
				message.ToolResult("call_1", []message.Block{message.Text("package a")}, false),
				message.ToolResult("call_2", []message.Block{message.Text("no such file")}, true),
				message.Text("and then?")),
			message.Assistant(message.ToolUse("call_3", "Read", json.RawMessage(`{"file_path":"c.go"}`))),
			message.User(message.ToolResult("call_3", []message.Block{message.Text("package c"), {Type: message.TypeImage, Source: png}}, false)),
		},
		Thinking: &provider.Thinking{BudgetTokens: 1000},
	}
	api := newFakeAPI(t, chunks(false, `{"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}`))
	if _, err := collect(t.Context(), newProvider(t, api.URL), req); err != nil {
		t.Fatal(err)
	}
	body := api.requests()[0]
	again, err := openai.EncodeRequest(req, "")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(body, again) {
		t.Errorf("encoding again gives other bytes:\n%s\n%s", body, again)
	}
	path := filepath.Join("testdata", "conversation.json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if diff := cmp.Diff(string(want), string(body)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}
