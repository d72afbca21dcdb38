package anthropic_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/provider/anthropic"
)

// The server blocks as the API streams them: the server_tool_use shell (with a caller field
// keel does not know), its input in pieces, then the whole search result.
const (
	serverUseStart = `{"type":"server_tool_use","id":"srvtoolu_01","name":"tool_search_tool_regex","input":{},"caller":{"type":"direct"}}`
	serverUseFinal = `{"type":"server_tool_use","id":"srvtoolu_01","name":"tool_search_tool_regex","input":{"pattern":"weather"},"caller":{"type":"direct"}}`
	searchResult   = `{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_01","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"mcp__wx__forecast"}]}}`
)

func deferredRequest() *provider.Request {
	return &provider.Request{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 1024,
		System:    []provider.SystemBlock{{Text: "You are keel."}},
		Tools: []provider.ToolSpec{
			{Name: "Read", Description: "Read a file.", InputSchema: json.RawMessage(`{"type":"object"}`)},
			{Name: "mcp__db__query", Description: "Run SQL.", InputSchema: json.RawMessage(`{"type":"object","properties":{"sql":{"type":"string"}}}`), DeferLoading: true},
			{Name: "mcp__wx__forecast", Description: "Weather forecast.", InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`),
				DeferLoading: true, CacheControl: &message.CacheControl{Type: "ephemeral"}},
		},
		Messages: []message.Message{message.User(message.Text("weather in Oslo?"))},
	}
}

// searchThenCall is the API's answer: the model searches on the server, then calls the found
// tool in the same response.
func searchThenCall() []sseEvent {
	ev := []sseEvent{
		{"message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"usage":{"input_tokens":50,"output_tokens":1}}}`},
		{"content_block_start", `{"type":"content_block_start","index":0,"content_block":` + serverUseStart + `}`},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"pattern\": "}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\"weather\"}"}}`},
		{"content_block_stop", `{"type":"content_block_stop","index":0}`},
		{"content_block_start", `{"type":"content_block_start","index":1,"content_block":` + searchResult + `}`},
		{"content_block_stop", `{"type":"content_block_stop","index":1}`},
		{"content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01","name":"mcp__wx__forecast","input":{}}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"city\":\"Oslo\"}"}}`},
		{"content_block_stop", `{"type":"content_block_stop","index":2}`},
		{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":30}}`},
		{"message_stop", `{"type":"message_stop"}`},
	}
	return ev
}

// TestDeferredToolsRoundTrip pins the body of a request with deferred tools (defer_loading, the
// search tool last, the tool-list breakpoint moved onto it), checks the server blocks of the
// answer are kept as sent and never offered as tool calls, and that the next request replays
// them byte for byte.
func TestDeferredToolsRoundTrip(t *testing.T) {
	api := newFakeAPI(t, stream(searchThenCall()), stream(sseFor(message.Assistant(message.Text("Sunny.")), message.StopEndTurn, message.Usage{})))
	p := newProvider(t, api.URL)
	if !provider.SupportsNativeToolSearch(provider.WithRetries(p, provider.RetryPolicy{}, nil)) {
		t.Fatal("the Anthropic adapter (behind retries) does not report native tool search")
	}

	req := deferredRequest()
	evs, err := collect(t.Context(), p, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if s, ok := ev.(provider.ToolUseStart); ok && s.Name != "mcp__wx__forecast" {
			t.Errorf("ToolUseStart for %q: server tool blocks must not look like tool calls", s.Name)
		}
		if d, ok := ev.(provider.InputDelta); ok && d.Index != 2 {
			t.Errorf("InputDelta for block %d: only the tool_use block streams input to the loop", d.Index)
		}
	}
	reply := lastDone(t, evs).Message
	want := message.Assistant(
		message.Block{Type: "server_tool_use", Raw: json.RawMessage(serverUseFinal)},
		message.Block{Type: "tool_search_tool_result", Raw: json.RawMessage(searchResult)},
		message.ToolUse("toolu_01", "mcp__wx__forecast", json.RawMessage(`{"city":"Oslo"}`)),
	)
	if diff := cmp.Diff(want, reply); diff != "" {
		t.Fatalf("reply mismatch (-want +got):\n%s", diff)
	}
	if uses := reply.ToolUses(); len(uses) != 1 || uses[0].Name != "mcp__wx__forecast" {
		t.Errorf("tool calls = %+v, want only mcp__wx__forecast", uses)
	}

	// The history goes through JSON (the transcript) before the next request.
	stored, err := json.Marshal(reply)
	if err != nil {
		t.Fatal(err)
	}
	var reloaded message.Message
	if err := json.Unmarshal(stored, &reloaded); err != nil {
		t.Fatal(err)
	}
	req.Messages = append(req.Messages, reloaded,
		message.User(message.ToolResult("toolu_01", []message.Block{message.Text("Sunny, 20°C")}, false)))
	req = withLatestBreakpoint(*req)
	if _, err := collect(t.Context(), p, req); err != nil {
		t.Fatal(err)
	}
	bodies := api.requests()
	if len(bodies) != 2 {
		t.Fatalf("%d requests, want 2", len(bodies))
	}
	for _, raw := range []string{serverUseFinal, searchResult} {
		if !bytes.Contains(bodies[1], []byte(raw)) {
			t.Errorf("second request does not replay %s byte for byte:\n%s", raw, bodies[1])
		}
	}
	toolsOf := func(b []byte) string {
		s := string(b)
		return s[strings.Index(s, `"tools":`):strings.Index(s, `,"messages":`)]
	}
	if a, b := toolsOf(bodies[0]), toolsOf(bodies[1]); a != b {
		t.Errorf("the tool list changed between requests:\n%s\n%s", a, b)
	}
	var all bytes.Buffer
	for _, b := range bodies {
		if !json.Valid(b) {
			t.Fatalf("body is not valid JSON: %s", b)
		}
		all.Write(b)
		all.WriteByte('\n')
	}
	goldenCompare(t, "deferred_tools.jsonl", all.Bytes())
}

func TestEncodeRawBlockWithBreakpointAndBadRaw(t *testing.T) {
	req := &provider.Request{Model: "m", Messages: []message.Message{
		message.User(message.Text("q")),
		message.Assistant(message.Block{Type: "tool_search_tool_result", Raw: json.RawMessage(searchResult),
			CacheControl: &message.CacheControl{Type: "ephemeral"}}),
	}}
	body, err := anthropic.EncodeRequest(req, "")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSuffix(searchResult, "}") + `,"cache_control":{"type":"ephemeral"}}`
	if !bytes.Contains(body, []byte(want)) {
		t.Errorf("body lacks %s:\n%s", want, body)
	}
	req.Messages[1].Content[0].Raw = json.RawMessage(`[1]`)
	if _, err := anthropic.EncodeRequest(req, ""); err == nil {
		t.Error("want an error for a raw block that is not an object")
	}
}

func TestNoSearchToolWithoutDeferredTools(t *testing.T) {
	body, err := anthropic.EncodeRequest(baseRequest(), "")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(body, []byte("tool_search")) || bytes.Contains(body, []byte("defer_loading")) {
		t.Errorf("a request without deferred tools mentions tool search:\n%s", body)
	}
}
