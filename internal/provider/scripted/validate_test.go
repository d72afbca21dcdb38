package scripted

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestConversationRules sends what the Messages API refuses and expects its 400 answer, word
// for word; the valid cases next to them must pass.
func TestConversationRules(t *testing.T) {
	use := func(id string) map[string]any {
		return map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{}}
	}
	res := func(id string) map[string]any {
		return map[string]any{"type": "tool_result", "tool_use_id": id, "content": "ok"}
	}
	text := func(s string) map[string]any { return map[string]any{"type": "text", "text": s} }
	thinking := func(s, sig string) map[string]any {
		return map[string]any{"type": "thinking", "thinking": s, "signature": sig}
	}
	good := thinkingSignature(1, 0, "plan")
	tests := []struct {
		name string
		msgs []any
		want string // "" = accepted
	}{
		{"paired", []any{user("go"), assistant([]any{use("a"), use("b")}), user([]any{res("a"), res("b"), text("more")})}, ""},
		{"unpaired tool_use", []any{user("go"), assistant([]any{use("a"), use("b")}), user([]any{res("a")})},
			"messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: b. Each `tool_use` block must have a corresponding `tool_result` block in the next message."},
		{"tool_use then a prompt", []any{user("go"), assistant([]any{use("a")}), user("next")},
			"messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: a. Each `tool_use` block must have a corresponding `tool_result` block in the next message."},
		{"result after text", []any{user("go"), assistant([]any{use("a")}), user([]any{text("note"), res("a")})},
			"messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: a. Each `tool_use` block must have a corresponding `tool_result` block in the next message."},
		{"unpaired tool_result", []any{user("go"), assistant("ok"), user([]any{res("x")})},
			"messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: x. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."},
		{"result not after its use", []any{user("go"), assistant([]any{use("a")}), user([]any{res("a")}), assistant("done"), user([]any{res("a")})},
			"messages.4.content.0: unexpected `tool_use_id` found in `tool_result` blocks: a. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."},
		{"duplicate tool_use id", []any{user("go"), assistant([]any{use("a")}), user([]any{res("a")}), assistant([]any{use("a")}), user([]any{res("a")})},
			"messages.3.content.0: `tool_use` ids must be unique"},
		{"empty text", []any{user([]any{text("")})}, "messages: text content blocks must be non-empty"},
		{"empty message", []any{user("go"), assistant([]any{}), user("again")},
			"messages.1: all messages must have non-empty content except for the optional final assistant message"},
		{"empty final assistant message", []any{user("go"), assistant([]any{})}, ""},
		{"blank text", []any{user([]any{text(" \n")})}, "messages: text content blocks must contain non-whitespace text"},
		{"two user messages", []any{user("a"), user("b")},
			`messages: roles must alternate between "user" and "assistant", but found multiple "user" roles in a row`},
		{"thinking replayed as given", []any{user("go"), assistant([]any{thinking("plan", good), text("hi")}), user("more")}, ""},
		{"latest thinking modified", []any{user("go"), assistant([]any{thinking("plan!", good), text("hi")}), user("more")},
			"messages.1.content.0: `thinking` or `redacted_thinking` blocks in the latest assistant message cannot be modified. These blocks must remain as they were in the original response."},
		{"older thinking modified", []any{user("go"), assistant([]any{thinking("plan!", good), text("hi")}), user("more"), assistant("ok"), user("again")},
			"messages.1.content.0: Invalid `signature` in `thinking` block"},
		{"thinking with a foreign signature", []any{user("go"), assistant([]any{thinking("plan", "c2ln"), text("hi")}), user("more")},
			"messages.1.content.0: `thinking` or `redacted_thinking` blocks in the latest assistant message cannot be modified. These blocks must remain as they were in the original response."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, &Scenario{}, Options{})
			resp, body := post(t, s, "/v1/messages", msgs(false, nil, tt.msgs...))
			if tt.want == "" {
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("valid conversation refused: %d %s", resp.StatusCode, body)
				}
				return
			}
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %s", resp.StatusCode, body)
			}
			var e struct {
				Type  string `json:"type"`
				Error struct {
					Type    string `json:"type"`
					Message string `json:"message"`
				} `json:"error"`
				RequestID string `json:"request_id"`
			}
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatal(err)
			}
			if e.Type != "error" || e.Error.Type != "invalid_request_error" || !strings.HasPrefix(e.RequestID, "req_") {
				t.Errorf("error shape: %s", body)
			}
			if diff := cmp.Diff(tt.want, e.Error.Message); diff != "" {
				t.Errorf("message mismatch (-want +got):\n%s", diff)
			}
			if recs := s.Requests(); len(recs) != 1 || recs[0].Status != http.StatusBadRequest || recs[0].Error != tt.want {
				t.Errorf("request log: %+v", recs)
			}
		})
	}
}

// TestToolNamesMustBeUnique: two tools of one name are refused.
func TestToolNamesMustBeUnique(t *testing.T) {
	s := start(t, &Scenario{}, Options{})
	resp, body := post(t, s, "/v1/messages", msgs(false, []any{tool("Read"), tool("Read")}, user("hi")))
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "tools: Tool names must be unique.") {
		t.Errorf("got %d %s", resp.StatusCode, body)
	}
}

// TestChatToolRules: chat completions refuse tool calls without answers and answers without
// calls, with OpenAI's messages.
func TestChatToolRules(t *testing.T) {
	call := map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "c1", "type": "function",
		"function": map[string]any{"name": "Read", "arguments": "{}"}}}}
	tests := []struct {
		name string
		msgs []any
		want string
	}{
		{"answered", []any{map[string]any{"role": "user", "content": "go"}, call, map[string]any{"role": "tool", "tool_call_id": "c1", "content": "x"}}, ""},
		{"unanswered", []any{map[string]any{"role": "user", "content": "go"}, call, map[string]any{"role": "user", "content": "next"}},
			"An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: c1"},
		{"stray tool message", []any{map[string]any{"role": "user", "content": "go"}, map[string]any{"role": "tool", "tool_call_id": "c1", "content": "x"}},
			"Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, &Scenario{}, Options{})
			resp, body := post(t, s, "/v1/chat/completions", chat(false, tt.msgs...))
			if tt.want == "" {
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("valid conversation refused: %d %s", resp.StatusCode, body)
				}
				return
			}
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), tt.want) {
				t.Errorf("got %d %s, want 400 with %q", resp.StatusCode, body, tt.want)
			}
		})
	}
}

// TestCorruptFault: the corrupted event keeps its name and loses its payload.
func TestCorruptFault(t *testing.T) {
	s := start(t, &Scenario{Rules: []Rule{{Reply: []Block{Text("hello there")}, Fault: &Fault{Corrupt: 1}}}}, Options{})
	resp, body := post(t, s, "/v1/messages", msgs(true, nil, user("hi")))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	evs := parseSSE(t, body)
	if len(evs) < 2 || evs[0].Event != "message_start" || json.Valid([]byte(evs[0].Data)) {
		t.Fatalf("first event %+v, want an undecodable message_start", evs[0])
	}
	if !json.Valid([]byte(evs[1].Data)) {
		t.Errorf("only the first event should be corrupt: %+v", evs[1])
	}
	if got := s.Requests()[0].Fault; got != "corrupt event 1" {
		t.Errorf("fault logged as %q", got)
	}
}
