package anthropic_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/provider/anthropic"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

// A request asking for the provider's clearing carries the clear_tool_uses edit and its beta
// header (the scripted model, like the API, refuses the edit without it), and Done says what
// the API cleared.
func TestClearToolResultsIsSentAndReported(t *testing.T) {
	srv, err := scripted.Start(t.Context(), "", &scripted.Scenario{}, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	if !provider.SupportsToolResultClearing(provider.WithRetries(newProvider(t, srv.URL()), provider.RetryPolicy{}, nil)) {
		t.Error("the Anthropic provider, wrapped in retries, does not report that it clears tool results")
	}
	history := []message.Message{message.User(message.Text("read the files"))}
	for i := 1; i <= 4; i++ {
		id := fmt.Sprintf("toolu_%d", i)
		history = append(history,
			message.Assistant(message.ToolUse(id, "Read", json.RawMessage(fmt.Sprintf(`{"file_path":"f%d.go"}`, i)))),
			message.User(message.ToolResult(id, []message.Block{message.Text(strings.Repeat("x", 4000))}, false)))
	}
	req := &provider.Request{MaxTokens: 1024, Messages: history,
		ClearToolResults: &provider.ToolResultClearing{Trigger: 2000, Keep: 2, ClearAtLeast: 500}}
	body, err := anthropic.EncodeRequest(req, "claude-test")
	if err != nil {
		t.Fatal(err)
	}
	want := `,"context_management":{"edits":[{"type":"clear_tool_uses_20250919","trigger":{"type":"input_tokens","value":2000},"keep":{"type":"tool_uses","value":2},"clear_at_least":{"type":"input_tokens","value":500}}]}`
	if !strings.Contains(string(body), want) {
		t.Errorf("body %s\nwant it to hold %s", body, want)
	}
	evs, err := collect(t.Context(), newProvider(t, srv.URL()), req)
	if err != nil {
		t.Fatal(err)
	}
	done := lastDone(t, evs)
	rec := srv.Requests()[0]
	if len(rec.AppliedEdits) != 1 || done.ClearedToolUses != 2 || done.ClearedInputTokens != int64(rec.AppliedEdits[0].ClearedInputTokens) {
		t.Errorf("Done cleared %d uses, %d tokens; the server applied %+v (want 2 uses)", done.ClearedToolUses, done.ClearedInputTokens, rec.AppliedEdits)
	}

	// Without it: no edit, no header needed, nothing reported.
	req.ClearToolResults = nil
	body, err = anthropic.EncodeRequest(req, "claude-test")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(body), "context_management") {
		t.Errorf("body without clearing holds context_management: %s", body)
	}
	evs, err = collect(t.Context(), newProvider(t, srv.URL()), req)
	if err != nil {
		t.Fatal(err)
	}
	if d := lastDone(t, evs); d.ClearedToolUses != 0 {
		t.Errorf("cleared %d without asking", d.ClearedToolUses)
	}
}
