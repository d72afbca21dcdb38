package session

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/keel-dev/keel/internal/builtin"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/provider/anthropic"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/tool"
)

// TestDeferredToolsCostTheirName measures what NotebookEdit, WebFetch and WebSearch add to a
// first request sent in full and sent deferred (defer_loading, as the prompt-economy work
// sends tool.Deferrable tools): the scripted model counts prompt tokens as the API does, and
// a deferred definition is not part of the prefix. Run with -v for the figures.
func TestDeferredToolsCostTheirName(t *testing.T) {
	srv, err := scripted.Start(t.Context(), "", &scripted.Scenario{}, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	count := func(tools []provider.ToolSpec) int {
		body, err := anthropic.EncodeRequest(&provider.Request{MaxTokens: 1, Tools: tools,
			Messages: []message.Message{message.User(message.Text("hi"))}}, "claude-sonnet-4-5")
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL()+"/v1/messages/count_tokens", bytes.NewReader(body))
		req.Header.Set("x-api-key", "k")
		req.Header.Set("anthropic-version", "2023-06-01")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			InputTokens int `json:"input_tokens"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return out.InputTokens
	}
	// A deferred tool needs the search tool beside it; a tiny deferred tool pays for that.
	tiny := provider.ToolSpec{Name: "T", InputSchema: json.RawMessage(`{"type":"object"}`), DeferLoading: true}
	none, searchOnly := count(nil), count([]provider.ToolSpec{tiny})
	for _, tl := range builtin.Tools(builtin.Options{}) {
		d, ok := tl.(tool.Deferrable)
		if !ok || !d.DeferLoading() {
			continue
		}
		spec := provider.ToolSpec{Name: tl.Name(), Description: tl.Description(), InputSchema: tl.InputSchema()}
		full := count([]provider.ToolSpec{spec}) - none
		spec.DeferLoading = true
		deferred := count([]provider.ToolSpec{tiny, spec}) - searchOnly
		t.Logf("%-12s in full: %4d tokens (%4d bytes of definition); deferred: %d tokens in the prefix, its name (%d bytes) in the list",
			tl.Name(), full, len(tl.Description())+len(tl.InputSchema())+len(tl.Name()), deferred, len(tl.Name()))
		if deferred != 0 {
			t.Errorf("%s deferred still costs %d prefix tokens", tl.Name(), deferred)
		}
		if full <= 0 {
			t.Errorf("%s in full costs %d tokens", tl.Name(), full)
		}
	}
}
