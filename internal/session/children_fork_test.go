package session

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel/internal/clearing"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/mcphost/mcptest"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/subagent"
)

// A fork child has the main agent's tools and system prompt byte for byte, so no tool list
// tells its requests from the main agent's. forking holds the main agent's rules, which come
// first and match only its own requests: the prompt, and the Agent result that carries the
// fork's final words (the fork's first request answers the Agent call too, with a
// placeholder). Every other request is the fork's, matched by the rules after them.
func forking(directive, then string, extra ...scripted.Rule) []scripted.Rule {
	return append([]scripted.Rule{
		{Name: "main forks", When: leadTurn(scripted.Match{UserText: "delegate"}), Reply: []scripted.Block{
			scripted.ToolUse("Agent", map[string]any{"description": "fork", "prompt": directive})}},
		{Name: "main goes on", When: leadTurn(scripted.Match{ToolResult: "Agent", Contains: "agentId:"}), Reply: []scripted.Block{scripted.Text(then)}},
	}, extra...)
}

// compactedByFork is compactedBy for the fork child, whose agent name is its type.
func compactedByFork(events []event.Event) bool { return compactedBy(events, subagent.ForkType) }

// A fork child whose history outgrows the window compacts, as a subagent does.
func TestForkCompactsWhenItsContextFills(t *testing.T) {
	_, cwd := longSession(t, 0)
	rules := forking("read big.txt over and over", "delegated", readsBig(scripted.Match{}, 14)...)
	h := newHarness(t, &scripted.Scenario{Rules: rules}, Options{Cwd: cwd, ContextWindow: 30_000, PermissionMode: "bypassPermissions",
		SettingsArgs: noClearing, ForkSubagents: true})
	events := h.send(t, "delegate")
	if res := result(t, events); res.Text != "delegated" {
		t.Fatalf("result %q", res.Text)
	}
	if !compactedByFork(events) {
		t.Error("the fork's history outgrew the window and it did not compact")
	}
	if compactedBy(events, "") {
		t.Error("the main agent compacted; only the fork's history was long")
	}
}

// A cache break in a fork child's requests is reported with the fork as its origin: here a
// tool the session's MCP server adds while the fork runs changes its tool list.
func TestCacheBreakInAForkIsReported(t *testing.T) {
	srv := mcptest.New()
	rules := forking("grow a tool", "delegated",
		scripted.Rule{Name: "fork grows", Times: 1, Reply: []scripted.Block{scripted.ToolUse("mcp__t__add_tool", map[string]string{"name": "fresh"})}},
		scripted.Rule{Name: "fork done", Reply: []scripted.Block{scripted.Text("child done")}})
	h := newHarness(t, &scripted.Scenario{Rules: rules}, Options{PermissionMode: "bypassPermissions", ForkSubagents: true,
		MCP: MCPOptions{ToolSearch: "off", InProcess: map[string]*mcp.Server{"t": srv.Server}}})
	events := h.send(t, "delegate")
	if res := result(t, events); res.Text != "delegated" {
		t.Fatalf("result %q", res.Text)
	}
	if breaks, ok := cacheBreakOf(events, subagent.ForkType, "mcp__t__fresh"); !ok {
		t.Errorf("cache breaks %+v; want the fork's, naming the tool added to its list", breaks)
	}
}

// --max-budget-usd counts what a fork child spends while it runs: a fork that overspends is
// stopped, and so is the turn that forked it.
func TestBudgetStopsATurnWhoseForkOverspends(t *testing.T) {
	_, cwd := longSession(t, 0)
	rules := forking("read big.txt over and over", "all done", readsBig(scripted.Match{}, 20)...)
	h := newHarness(t, &scripted.Scenario{Rules: rules}, Options{Cwd: cwd, PermissionMode: "bypassPermissions", ForkSubagents: true,
		SDK: SDKOptions{MaxBudgetUSD: 0.05}})
	res := result(t, h.send(t, "delegate"))
	if res.Subtype != "error_max_budget_usd" {
		t.Errorf("result %s (%q, $%.4f); want error_max_budget_usd", res.Subtype, res.Text, res.CostUSD)
	}
	reads := 0
	for _, r := range h.srv.Requests() {
		if strings.HasPrefix(r.Rule, "child reads") {
			reads++
			if !strings.Contains(string(r.Body), "<"+subagent.ForkTag+">") {
				t.Fatalf("%s was not a fork's request", r.Rule)
			}
		}
		if r.Rule == "main goes on" {
			t.Error("the main agent was asked again after its fork had spent the budget")
		}
	}
	if reads == 0 {
		t.Fatal("the fork never read: the test proves nothing")
	}
	if reads >= 20 {
		t.Errorf("the fork read %d times; the budget should have stopped it", reads)
	}
}

// A fork child clears its stale tool results as every agent does, and each request that
// carries stubs still reads its unchanged prefix from the cache: the fork's mark at the end
// of the prefix its siblings share must not take the place of the mark clearing puts before
// the first stub (the fork's would leave every later clearing reading only up to the fork's
// first turn, plus what the provider's lookback from the newest message happens to find).
func TestForkClearsStaleToolResults(t *testing.T) {
	_, cwd := longSession(t, 0)
	rules := forking("read big.txt over and over", "delegated", readsBig(scripted.Match{}, 14)...)
	h := newHarness(t, &scripted.Scenario{Rules: rules}, Options{Cwd: cwd, ContextWindow: 60_000, PermissionMode: "bypassPermissions", ForkSubagents: true})
	events := h.send(t, "delegate")
	if res := result(t, events); res.Text != "delegated" {
		t.Fatalf("result %q", res.Text)
	}
	if compactedByFork(events) {
		t.Error("the fork compacted although clearing kept its history small")
	}
	for _, e := range events {
		if b, ok := e.(event.CacheBreak); ok {
			t.Errorf("cache break reported: %s: %s (%s)", b.Segment, b.Reason, b.Origin.AgentName)
		}
	}
	stubbed := 0
	for _, r := range h.srv.Requests() {
		if !strings.HasPrefix(r.Rule, "child") || !strings.Contains(string(r.Body), clearing.StubPrefix) {
			continue
		}
		stubbed++
		if read, shared := r.Cache.CacheReadTokens, r.Cache.SharedPrefixTokens; float64(read) < 0.99*float64(shared) {
			t.Errorf("the fork's request %d (%s) read %d of its %d unchanged prefix tokens from the cache (%.3f), want ≥ 0.99",
				r.N, r.Rule, read, shared, float64(read)/float64(shared))
		}
	}
	if stubbed < 2 {
		t.Fatalf("%d of the fork's requests carry stubs of cleared tool results; the test wants a clearing after the first", stubbed)
	}
}
