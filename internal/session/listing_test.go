package session

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/mcphost/mcptest"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

// TestListingChangesCostOnlyTheirDelta: an MCP tool that appears mid-run (a new generation,
// deferred because tool search is on) is announced in a delta message; nothing before it —
// tools, system prompt, earlier messages — changes, so the request reads everything the
// previous one sent from the cache.
func TestListingChangesCostOnlyTheirDelta(t *testing.T) {
	srv := mcptest.New()
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "grow"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("mcp__t__add_tool", map[string]string{"name": "fresh"})}},
		{Reply: []scripted.Block{scripted.Text("done")}},
	}}
	h := newHarness(t, sc, Options{PermissionMode: "bypassPermissions",
		MCP: MCPOptions{ToolSearch: "on", InProcess: map[string]*mcp.Server{"t": srv.Server}}})
	events := h.send(t, "grow a tool")
	for _, e := range events {
		if b, ok := e.(event.CacheBreak); ok {
			t.Errorf("a new deferred tool was reported as a cache break: %+v", b)
		}
	}
	reqs := h.srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	_, first := wireParts(t, reqs[0].Body)
	_, second := wireParts(t, reqs[1].Body)
	if strings.Contains(first, "mcp__t__fresh") || !strings.Contains(second, "Deferred tools added:\n- mcp__t__fresh") {
		t.Errorf("the new tool is not announced as a delta:\n%s", second)
	}
	if strings.Count(second, "Deferred tools: not callable") != 1 {
		t.Error("the full deferred listing was repeated")
	}
	if c := reqs[1].Cache; c.CacheReadTokens < reqs[0].Cache.InputTokens {
		t.Errorf("the request after the change read %d tokens from the cache, want all %d of the one before", c.CacheReadTokens, reqs[0].Cache.InputTokens)
	}
}

// TestResumedSessionIsNotToldAgain: after a resume the listing is read back from the
// transcript, so the next request carries no second copy of it.
func TestResumedSessionIsNotToldAgain(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	first := newHarness(t, echoScenario(), Options{Home: home, Cwd: cwd})
	first.send(t, "hello")
	id := first.sess.ID()
	first.sess.Close()
	second := newHarness(t, echoScenario(), Options{Home: home, Cwd: cwd, Resume: id})
	second.send(t, "hello again")
	_, msgs := wireParts(t, lastBody(t, second))
	if n := strings.Count(msgs, "Agent types the Agent tool can start"); n != 1 {
		t.Errorf("the resumed conversation holds %d agent listings, want the one from before the resume", n)
	}
}

// TestSubagentAndForkListings: a subagent is told its own lists — skills and deferred tools,
// no agent types when it cannot start agents; a fork child inherits its parent's listing and
// is told nothing more, so its request is the parent's plus the copied turn and its directive.
func TestSubagentAndForkListings(t *testing.T) {
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "fork", When: scripted.Match{UserText: "<keel-fork-directive>"}, Reply: []scripted.Block{scripted.Text("fork done")}},
		{Name: "explore", When: scripted.Match{UserText: "look around"}, Reply: []scripted.Block{scripted.Text("explored")}},
		{Name: "fanout", When: scripted.Match{UserText: "split"}, Times: 1, Reply: []scripted.Block{
			scripted.ToolUse("Agent", map[string]any{"description": "f", "prompt": "part f"}),
			scripted.ToolUse("Agent", map[string]any{"description": "e", "prompt": "look around", "subagent_type": "Explore"}),
		}},
		{Name: "done", When: scripted.Match{ToolResult: "Agent"}, Reply: []scripted.Block{scripted.Text("all done")}},
	}}
	h := newHarness(t, sc, Options{ForkSubagents: true})
	result(t, h.send(t, "split the work"))
	byRule := map[string]scripted.Recorded{}
	for _, r := range h.srv.Requests() {
		if _, seen := byRule[r.Rule]; !seen {
			byRule[r.Rule] = r
		}
	}
	_, explore := wireParts(t, byRule["explore"].Body)
	if strings.Contains(explore, "Agent types") || !strings.Contains(explore, "Skills the Skill tool can load") ||
		!strings.Contains(explore, "- BashOutput") || strings.Contains(explore, "- TaskOutput") {
		t.Errorf("the Explore subagent's listing is not its own:\n%s", explore)
	}
	parent, fork := decodeWire(t, byRule["fanout"].Body), decodeWire(t, byRule["fork"].Body)
	if len(fork.Messages) != len(parent.Messages)+2 {
		t.Fatalf("fork child has %d messages, want the parent's %d + the copied turn + its own", len(fork.Messages), len(parent.Messages))
	}
	last := fork.Messages[len(fork.Messages)-1]
	if n := len(last.Content); n != 4 { // two placeholder results, the briefing, the directive
		t.Errorf("the fork child's own message has %d blocks, want 4 (nothing announced):\n%v", n, last.Content)
	}
}

func decodeWire(t *testing.T, body []byte) wireRequest {
	t.Helper()
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		t.Fatal(err)
	}
	return w
}
