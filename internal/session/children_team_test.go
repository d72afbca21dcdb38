package session

import (
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/mcphost/mcptest"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/waittest"
)

// sendAndSettle sends prompt and then, like keel -p, gives the main thread a turn for each
// report of its background agents and team until they are done; it returns every event of
// those turns and of the work between them (held for a turn or seen while idle).
func sendAndSettle(t *testing.T, h *harness, prompt string) []event.Event {
	t.Helper()
	var mu sync.Mutex
	var idle []event.Event
	h.sess.agents.SetIdleEvents(func(e event.Event) {
		mu.Lock()
		defer mu.Unlock()
		idle = append(idle, e)
	})
	events := h.send(t, prompt)
	events = append(events, drain(t, h.sess)...)
	h.sess.agents.SetIdleEvents(nil)
	mu.Lock()
	defer mu.Unlock()
	return append(events, idle...)
}

// results are the main thread's results among events, in order.
func results(events []event.Event) []event.Result {
	var out []event.Result
	for _, e := range events {
		if r, ok := e.(event.Result); ok && r.Origin.AgentID == "" {
			out = append(out, r)
		}
	}
	return out
}

// A cache break in a teammate's requests is reported with the teammate as its origin, as a
// subagent's is: here a tool the session's MCP server adds while she runs changes her tool
// list.
func TestCacheBreakInATeammateIsReported(t *testing.T) {
	srv := mcptest.New()
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "alice grows", When: mateIs("alice"), Times: 1, Reply: []scripted.Block{scripted.ToolUse("mcp__t__add_tool", map[string]string{"name": "fresh"})}},
		{Name: "alice done", When: mateIs("alice"), Reply: []scripted.Block{scripted.Text("alice done")}},
		{Name: "lead spawns", When: leadTurn(scripted.Match{UserText: "start the team"}), Reply: []scripted.Block{
			scripted.ToolUse("Agent", map[string]any{"description": "grower", "prompt": "grow a tool", "name": "alice"})}},
		{Name: "lead waits", When: leadTurn(scripted.Match{ToolResult: "Agent"}), Reply: []scripted.Block{scripted.Text("alice grows")}},
	}, Fallback: &scripted.Rule{Reply: []scripted.Block{scripted.Text("noted")}}}
	h := newHarness(t, sc, Options{PermissionMode: "bypassPermissions",
		MCP:  MCPOptions{ToolSearch: "off", InProcess: map[string]*mcp.Server{"t": srv.Server}},
		Team: TeamOptions{Enabled: true, ShutdownTimeout: waittest.Timeout()}})
	if breaks, ok := cacheBreakOf(sendAndSettle(t, h, "start the team"), "alice", "mcp__t__fresh"); !ok {
		t.Errorf("cache breaks %+v; want alice's, naming the tool added to her list", breaks)
	}
}

// --max-budget-usd counts what an in-process teammate spends, as it counts a subagent's: a
// teammate that overspends is stopped, and the lead's next turn ends at the budget after its
// first request, although the lead itself spent less than the budget. (A teammate stopped by
// the budget goes idle; an idle teammate does not wake the lead, so the team settles without
// another lead turn.)
// (A teammate in a process of its own — teammateMode tmux or process — is a session of its
// own: it is given the lead's configuration, --max-budget-usd included, as its own budget,
// and what it spends is not the lead's.)
func TestBudgetStopsATeammateThatOverspends(t *testing.T) {
	_, cwd := longSession(t, 0)
	rules := append(readsBig(mateIs("alice"), 20),
		scripted.Rule{Name: "lead spawns", When: leadTurn(scripted.Match{UserText: "start the team"}), Reply: []scripted.Block{
			scripted.ToolUse("Agent", map[string]any{"description": "reader", "prompt": "read big.txt over and over", "name": "alice"})}},
		scripted.Rule{Name: "lead waits", When: leadTurn(scripted.Match{ToolResult: "Agent"}), Reply: []scripted.Block{scripted.Text("alice reads")}},
		scripted.Rule{Name: "lead reads", When: leadTurn(scripted.Match{UserText: "go on"}), Reply: []scripted.Block{
			scripted.ToolUse("Read", map[string]string{"file_path": "big.txt"})}},
		scripted.Rule{Name: "lead goes on", When: leadTurn(scripted.Match{ToolResult: "Read"}), Reply: []scripted.Block{scripted.Text("all done")}})
	sc := &scripted.Scenario{Rules: rules, Fallback: &scripted.Rule{Reply: []scripted.Block{scripted.Text("noted")}}}
	h := newHarness(t, sc, Options{Cwd: cwd, PermissionMode: "bypassPermissions", SDK: SDKOptions{MaxBudgetUSD: 0.05},
		Team: TeamOptions{Enabled: true, ShutdownTimeout: waittest.Timeout()}})
	sendAndSettle(t, h, "start the team")
	res := result(t, h.send(t, "go on"))
	if reads := childReadsUntil(t, h, "lead goes on"); reads >= 20 {
		t.Errorf("alice read %d times; the budget should have stopped her", reads)
	}
	if res.Subtype != "error_max_budget_usd" {
		t.Errorf("the lead's turn after alice overspent: %s (%q); want error_max_budget_usd", res.Subtype, res.Text)
	}
}
