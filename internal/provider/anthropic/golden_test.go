package anthropic_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/provider/anthropic"
)

// conversationReplies are the model's three turns: read a file, edit it (after thinking), and
// finish with text.
func conversationReplies() []message.Message {
	return []message.Message{
		message.Assistant(message.Text("Let me read the test."),
			message.ToolUse("toolu_01", "Read", json.RawMessage(`{"file_path":"calc_test.go"}`))),
		message.Assistant(
			message.Block{Type: message.TypeThinking, Thinking: "The sign is wrong in Add.", Signature: "EqQBCkgIARABGAIiQ=="},
			message.ToolUse("toolu_02", "Edit", json.RawMessage(`{"file_path":"calc.go","old_string":"a - b","new_string":"a + b"}`))),
		message.Assistant(message.Text("Fixed: Add now adds <a> & <b>.")),
	}
}

var toolResults = map[string]string{
	"toolu_01": "func TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"\\\"wrong\\\"\")\n\t}\n}\n",
	"toolu_02": "The file calc.go has been updated.",
}

// baseRequest is the request of the first turn; later turns append to Messages.
func baseRequest() *provider.Request {
	oneHour := &message.CacheControl{Type: "ephemeral", TTL: "1h"}
	return &provider.Request{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 32000,
		System: []provider.SystemBlock{
			{Text: "You are keel, a coding agent.\nBe brief.", CacheControl: oneHour},
			{Text: "cwd: ./ws\tdate: 2026-01-02"},
		},
		Tools: []provider.ToolSpec{
			{Name: "Read", Description: "Read a file.",
				// Spacing kept on purpose: raw schemas are sent byte for byte.
				InputSchema: json.RawMessage(`{"type": "object", "properties": {"file_path": {"type": "string"}, "offset": {"type": "integer"}, "limit": {"type": "integer"}}, "required": ["file_path"]}`)},
			{Name: "Edit", Description: "Replace text in a file.",
				InputSchema:  json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"},"old_string":{"type":"string"},"new_string":{"type":"string"},"replace_all":{"type":"boolean"}},"required":["file_path","old_string","new_string"]}`),
				CacheControl: oneHour},
		},
		Messages: []message.Message{message.User(message.Text("fix the failing test"))},
		Thinking: &provider.Thinking{BudgetTokens: 8000},
		Source:   "main",
		Metadata: map[string]string{"user_id": "u-123", "session": "s-9", "a_first": "1"},
	}
}

// withLatestBreakpoint returns a copy of req whose last message block carries the rolling
// cache breakpoint, the way the loop marks the latest message.
func withLatestBreakpoint(req provider.Request) *provider.Request {
	msgs := make([]message.Message, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = m.Clone()
	}
	last := &msgs[len(msgs)-1]
	last.Content[len(last.Content)-1].CacheControl = &message.CacheControl{Type: "ephemeral"}
	req.Messages = msgs
	return &req
}

// TestGoldenThreeTurnConversation runs a 3-turn tool-using conversation against a loopback
// server and pins the exact bytes of all three request bodies.
func TestGoldenThreeTurnConversation(t *testing.T) {
	replies := conversationReplies()
	var answers []answer
	for i, r := range replies {
		stop := message.StopToolUse
		if i == len(replies)-1 {
			stop = message.StopEndTurn
		}
		answers = append(answers, stream(sseFor(r, stop, message.Usage{InputTokens: 10, OutputTokens: 5})))
	}
	api := newFakeAPI(t, answers...)
	p := newProvider(t, api.URL)

	req := baseRequest()
	for turn := range replies {
		evs, err := collect(t.Context(), p, withLatestBreakpoint(*req))
		if err != nil {
			t.Fatalf("turn %d: %v", turn+1, err)
		}
		done := lastDone(t, evs)
		if diff := cmp.Diff(replies[turn], done.Message); diff != "" {
			t.Fatalf("turn %d reply mismatch (-want +got):\n%s", turn+1, diff)
		}
		req.Messages = append(req.Messages, done.Message)
		var results []message.Block
		for _, use := range done.Message.ToolUses() {
			results = append(results, message.ToolResult(use.ID, []message.Block{message.Text(toolResults[use.ID])}, false))
		}
		if len(results) > 0 {
			req.Messages = append(req.Messages, message.User(results...))
		}
	}

	bodies := api.requests()
	if len(bodies) != 3 {
		t.Fatalf("%d requests, want 3", len(bodies))
	}
	var all bytes.Buffer
	for _, b := range bodies {
		if !json.Valid(b) {
			t.Fatalf("body is not valid JSON: %s", b)
		}
		all.Write(b)
		all.WriteByte('\n')
	}
	goldenCompare(t, "three_turns.jsonl", all.Bytes())

	// Each body sent equals a fresh encoding of the same request.
	for i, b := range bodies {
		again, err := anthropic.EncodeRequest(withLatestBreakpoint(requestAt(req, i)), "")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, again) {
			t.Errorf("request %d: encoding again gives other bytes:\n%s\n%s", i+1, b, again)
		}
	}
}

// requestAt is req as it was for turn i (0-based): the user prompt plus two messages a turn.
func requestAt(req *provider.Request, i int) provider.Request {
	r := *req
	r.Messages = req.Messages[:1+2*i]
	return r
}

func TestEncodeDeterministic(t *testing.T) {
	a, err := anthropic.EncodeRequest(baseRequest(), "")
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		b, err := anthropic.EncodeRequest(baseRequest(), "")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Fatalf("two encodings differ:\n%s\n%s", a, b)
		}
	}
	// The body must agree with encoding/json on every string (escapes included).
	var decoded struct {
		System []struct{ Text string } `json:"system"`
	}
	if err := json.Unmarshal(a, &decoded); err != nil {
		t.Fatal(err)
	}
	if decoded.System[1].Text != "cwd: ./ws\tdate: 2026-01-02" {
		t.Errorf("system text round trip: %q", decoded.System[1].Text)
	}
}

func TestEncodeStrings(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"b\\s", "\x00\x01\x1f\x7f", "tab\tnl\ncr\r", "<&>", "ünï😀", "\u2028\u2029", "bad\xffutf8"} {
		body, err := anthropic.EncodeRequest(&provider.Request{Model: "m", Messages: []message.Message{message.User(message.Text(s))}}, "")
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Messages []message.Message `json:"messages"`
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("%q: %v in %s", s, err, body)
		}
		want, _ := json.Marshal(s) // encoding/json's replacement for bad UTF-8
		var wantS string
		_ = json.Unmarshal(want, &wantS)
		if diff := cmp.Diff(wantS, got.Messages[0].Content[0].Text); diff != "" {
			t.Errorf("string %q mismatch (-want +got):\n%s", s, diff)
		}
	}
}

func TestEncodeRejectsBadRawJSON(t *testing.T) {
	req := baseRequest()
	req.Tools[0].InputSchema = json.RawMessage(`{"type":`)
	if _, err := anthropic.EncodeRequest(req, ""); err == nil {
		t.Fatal("want error for an invalid schema")
	}
}
