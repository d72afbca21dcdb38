package anthropic_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/keel-dev/keel/internal/message"
)

// fakeAPI is a tiny Messages API on 127.0.0.1: it records every request body and answers the
// n-th request with answers[n] (the last answer repeats).
type fakeAPI struct {
	*httptest.Server

	// mu guards bodies and headers.
	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
	answers []answer
}

type answer func(w http.ResponseWriter, r *http.Request)

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
		if r.URL.Path != "/v1/messages" {
			http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"no such path"}}`, http.StatusNotFound)
			return
		}
		f.answers[min(n, len(f.answers)-1)](w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAPI) requests() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.bodies...)
}

type sseEvent struct{ name, data string }

func writeSSE(w http.ResponseWriter, events []sseEvent) {
	w.Header().Set("content-type", "text/event-stream")
	w.Header().Set("request-id", "req_test")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	for _, e := range events {
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.name, e.data)
		fl.Flush()
	}
}

// stream answers with a whole SSE response.
func stream(events []sseEvent) answer {
	return func(w http.ResponseWriter, _ *http.Request) { writeSSE(w, events) }
}

// dropAfter sends the first n events, then cuts the connection without finishing the chunked
// body, the way a dying proxy does.
func dropAfter(events []sseEvent, n int) answer {
	return func(w http.ResponseWriter, _ *http.Request) {
		writeSSE(w, events[:n])
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}
}

// status answers with an HTTP error.
func status(code int, errType, msg string, header ...string) answer {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("content-type", "application/json")
		w.Header().Set("request-id", "req_err")
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":%q}}`, errType, msg)
	}
}

func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// sseFor renders msg as the real Messages event sequence: message_start, a ping, per block a
// start, deltas in small pieces and a stop, then message_delta and message_stop. Usage is split
// the way the API splits it: input and cache counts at the start, output at the end.
func sseFor(msg message.Message, stop message.StopReason, u message.Usage) []sseEvent {
	ev := []sseEvent{
		{"message_start", js(map[string]any{"type": "message_start", "message": map[string]any{
			"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test", "content": []any{},
			"stop_reason": nil, "usage": map[string]any{
				"input_tokens": u.InputTokens, "output_tokens": 1,
				"cache_creation_input_tokens": u.CacheCreationInputTokens,
				"cache_read_input_tokens":     u.CacheReadInputTokens,
			}}})},
		{"ping", `{"type":"ping"}`},
	}
	for i, b := range msg.Content {
		var start map[string]any
		var deltas []map[string]any
		switch b.Type {
		case message.TypeText:
			start = map[string]any{"type": "text", "text": ""}
			for _, p := range pieces(b.Text, 5) {
				deltas = append(deltas, map[string]any{"type": "text_delta", "text": p})
			}
		case message.TypeThinking:
			start = map[string]any{"type": "thinking", "thinking": "", "signature": ""}
			for _, p := range pieces(b.Thinking, 7) {
				deltas = append(deltas, map[string]any{"type": "thinking_delta", "thinking": p})
			}
			deltas = append(deltas, map[string]any{"type": "signature_delta", "signature": b.Signature})
		case message.TypeRedactedThinking:
			start = map[string]any{"type": "redacted_thinking", "data": b.Data}
		case message.TypeToolUse:
			start = map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": map[string]any{}}
			// Spaced JSON, as the API streams it; the adapter compacts it.
			var spaced bytes.Buffer
			_ = json.Indent(&spaced, b.Input, "", " ")
			for _, p := range pieces(spaced.String(), 6) {
				deltas = append(deltas, map[string]any{"type": "input_json_delta", "partial_json": p})
			}
		}
		ev = append(ev, sseEvent{"content_block_start", js(map[string]any{"type": "content_block_start", "index": i, "content_block": start})})
		for _, d := range deltas {
			ev = append(ev, sseEvent{"content_block_delta", js(map[string]any{"type": "content_block_delta", "index": i, "delta": d})})
		}
		ev = append(ev, sseEvent{"content_block_stop", js(map[string]any{"type": "content_block_stop", "index": i})})
	}
	ev = append(ev,
		sseEvent{"message_delta", js(map[string]any{"type": "message_delta",
			"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": u.OutputTokens}})},
		sseEvent{"message_stop", `{"type":"message_stop"}`})
	return ev
}

func pieces(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

func TestPiecesJoin(t *testing.T) {
	if got := strings.Join(pieces("hello, world", 5), ""); got != "hello, world" {
		t.Fatalf("pieces lose text: %q", got)
	}
}
