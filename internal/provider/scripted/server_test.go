package scripted

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/goldentest"
	"github.com/keel-dev/keel/internal/waittest"
)

// start runs a server for sc on a free loopback port for the duration of the test.
func start(t *testing.T, sc *Scenario, opts Options) *Server {
	t.Helper()
	s, err := Start(t.Context(), "", sc, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// post sends body to the server with Anthropic headers and returns the response with its
// whole body read.
func post(t *testing.T, s *Server, path string, body any) (*http.Response, []byte) {
	t.Helper()
	b, ok := body.([]byte)
	if !ok {
		var err error
		if b, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL()+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("content-type", "application/json")
	req.Header.Set("x-api-key", "any-key")
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read response of %s: %v", path, err)
	}
	return resp, out
}

// msgs builds a Messages API body: the model, a one-line system prompt, the given tools and
// messages, max_tokens, and stream.
func msgs(stream bool, tools []any, messages ...any) map[string]any {
	body := map[string]any{
		"model":      "claude-test",
		"max_tokens": 1024,
		"system":     "You are keel.",
		"messages":   messages,
		"stream":     stream,
	}
	if tools != nil {
		body["tools"] = tools
	}
	return body
}

func user(content any) map[string]any { return map[string]any{"role": "user", "content": content} }
func assistant(content any) map[string]any {
	return map[string]any{"role": "assistant", "content": content}
}

func tool(name string) map[string]any {
	return map[string]any{"name": name, "description": name + " tool", "input_schema": map[string]any{"type": "object"}}
}

type sse struct {
	Event string
	Data  string
}

func parseSSE(t *testing.T, body []byte) []sse {
	t.Helper()
	var out []sse
	var cur sse
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.Event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.Data = strings.TrimPrefix(line, "data: ")
		case line == "":
			out = append(out, cur)
			cur = sse{}
		}
	}
	return out
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldentest.Check(t, name, got)
}

func replyScenario() *Scenario {
	return &Scenario{Rules: []Rule{{
		Name: "answer",
		Reply: []Block{
			Thinking("I should read the file before changing it."),
			Text("Let me read calc.go first."),
			ToolUse("Read", map[string]any{"file_path": "calc.go", "limit": 20}),
		},
	}}}
}

func TestAnthropicStreamGolden(t *testing.T) {
	s := start(t, replyScenario(), Options{})
	resp, body := post(t, s, "/v1/messages", msgs(true, []any{tool("Read")}, user("fix the test")))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("content-type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("content-type %q, want text/event-stream", ct)
	}
	golden(t, "stream.golden", body)

	// The sequence, independent of the golden bytes.
	var got []string
	var input, thinking, sig strings.Builder
	for _, ev := range parseSSE(t, body) {
		var d struct {
			Type  string `json:"type"`
			Delta struct {
				Type        string `json:"type"`
				PartialJSON string `json:"partial_json"`
				Thinking    string `json:"thinking"`
				Signature   string `json:"signature"`
			} `json:"delta"`
		}
		if err := json.Unmarshal([]byte(ev.Data), &d); err != nil {
			t.Fatalf("event %s: %v", ev.Event, err)
		}
		if d.Type != ev.Event {
			t.Errorf("event %q carries type %q", ev.Event, d.Type)
		}
		name := ev.Event
		if d.Delta.Type != "" && ev.Event == "content_block_delta" {
			name += "/" + d.Delta.Type
		}
		if len(got) == 0 || got[len(got)-1] != name {
			got = append(got, name)
		}
		input.WriteString(d.Delta.PartialJSON)
		thinking.WriteString(d.Delta.Thinking)
		sig.WriteString(d.Delta.Signature)
	}
	want := []string{
		"message_start",
		"content_block_start", "ping", "content_block_delta/thinking_delta", "content_block_delta/signature_delta", "content_block_stop",
		"content_block_start", "content_block_delta/text_delta", "content_block_stop",
		"content_block_start", "content_block_delta/input_json_delta", "content_block_stop",
		"message_delta", "message_stop",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("event sequence mismatch (-want +got):\n%s", diff)
	}
	if input.String() != `{"file_path":"calc.go","limit":20}` {
		t.Errorf("accumulated input = %s", input.String())
	}
	if thinking.String() != "I should read the file before changing it." || sig.String() == "" {
		t.Errorf("thinking = %q, signature = %q", thinking.String(), sig.String())
	}
	if n := strings.Count(string(body), `"input_json_delta"`); n < 3 {
		t.Errorf("tool input came in %d input_json_delta events, want several", n)
	}
}

func TestAnthropicNonStreaming(t *testing.T) {
	s := start(t, replyScenario(), Options{})
	resp, body := post(t, s, "/v1/messages", msgs(false, []any{tool("Read")}, user("fix the test")))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if got := resp.Header.Get("request-id"); got != "req_scripted_0001" {
		t.Errorf("request-id = %q", got)
	}
	golden(t, "message.golden", body)
}

func TestCountTokens(t *testing.T) {
	s := start(t, &Scenario{}, Options{})
	body := msgs(false, []any{tool("Read")}, user("hello"))
	delete(body, "max_tokens")
	resp, out := post(t, s, "/v1/messages/count_tokens", body)
	var got struct {
		InputTokens int `json:"input_tokens"`
	}
	if err := json.Unmarshal(out, &got); err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d, body %s, err %v", resp.StatusCode, out, err)
	}
	// Same prompt through /v1/messages reports the same total.
	_, _ = post(t, s, "/v1/messages", msgs(false, []any{tool("Read")}, user("hello")))
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("count_tokens was recorded: %d requests", len(reqs))
	}
	if got.InputTokens == 0 || got.InputTokens != reqs[0].Cache.InputTokens {
		t.Errorf("count_tokens = %d, messages input = %d", got.InputTokens, reqs[0].Cache.InputTokens)
	}
}

func TestHeadersAndBadRequests(t *testing.T) {
	s := start(t, &Scenario{}, Options{})
	tests := []struct {
		name    string
		headers map[string]string
		body    string
		status  int
		want    string
	}{
		{"no key", map[string]string{"anthropic-version": "2023-06-01"}, `{}`, 401,
			`{"type":"error","error":{"type":"authentication_error","message":"x-api-key header is required"},"request_id":"req_scripted_0001"}`},
		{"no version", map[string]string{"x-api-key": "k"}, `{}`, 400,
			`{"type":"error","error":{"type":"invalid_request_error","message":"anthropic-version: header is required"},"request_id":"req_scripted_0002"}`},
		{"bearer ok, no max_tokens", map[string]string{"authorization": "Bearer k", "anthropic-version": "v"},
			`{"model":"m","messages":[{"role":"user","content":"hi"}]}`, 400,
			`{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"},"request_id":"req_scripted_0003"}`},
		{"bad json", map[string]string{"x-api-key": "k", "anthropic-version": "v"}, `{`, 400, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), "POST", s.URL()+"/v1/messages", strings.NewReader(tt.body))
			for k, v := range tt.headers {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Errorf("status = %d, want %d (%s)", resp.StatusCode, tt.status, body)
			}
			if tt.want != "" && strings.TrimSpace(string(body)) != tt.want {
				t.Errorf("body mismatch (-want +got):\n%s", cmp.Diff(tt.want, strings.TrimSpace(string(body))))
			}
		})
	}
}

func TestWaitRequests(t *testing.T) {
	s := start(t, &Scenario{}, Options{})
	got := make(chan []Recorded, 1)
	go func() {
		recs, err := s.WaitRequests(t.Context(), 2)
		if err != nil {
			t.Error(err)
		}
		got <- recs
	}()
	post(t, s, "/v1/messages", msgs(false, nil, user("one")))
	post(t, s, "/v1/messages", msgs(false, nil, user("two")))
	recs := waittest.Recv(t, "WaitRequests to return", got)
	if len(recs) < 2 || recs[1].N != 2 {
		t.Fatalf("WaitRequests returned %d records", len(recs))
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond) //keel:duration meant to pass
	defer cancel()
	if _, err := s.WaitRequests(ctx, 3); err == nil {
		t.Error("WaitRequests for a request that never comes returned no error")
	}
}
