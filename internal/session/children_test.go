package session

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel/internal/clearing"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/mcphost/mcptest"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/waittest"
)

// Every agent is built by one constructor and driven by one driver, so what the main agent
// gets — compaction, cache-break reports, the budget, its thinking effort — every subagent,
// fork child and teammate gets too. These tests hold each of those for children.

// readsBig are rules under which an agent matched by who reads big.txt times times, each
// from another line so no read is a repeat the Read tool shortens, then says done; the
// summary rule answers compaction requests.
func readsBig(who scripted.Match, times int) []scripted.Rule {
	rules := []scripted.Rule{{Name: "summary", When: scripted.Match{UserText: "Summarise this conversation"}, Reply: []scripted.Block{scripted.Text("SUMMARY: big.txt was read.")}}}
	for i := 1; i <= times; i++ {
		rules = append(rules, scripted.Rule{Name: "child reads " + strconv.Itoa(i), When: who, Times: 1,
			Reply: []scripted.Block{scripted.ToolUse("Read", map[string]any{"file_path": "big.txt", "offset": i})}})
	}
	return append(rules, scripted.Rule{Name: "child done", When: who, Reply: []scripted.Block{scripted.Text("child done")}})
}

// compactedBy finds the Compacted event of the agent named name.
func compactedBy(events []event.Event, name string) bool {
	for _, e := range events {
		if c, ok := e.(event.Compacted); ok && c.Origin.AgentName == name {
			return true
		}
	}
	return false
}

// noClearing turns off the clearing of stale tool results, which would keep these histories
// below the compaction threshold.
var noClearing = []string{`{"clearToolResults": false}`}

// A subagent whose history outgrows the window compacts, as the main agent does.
func TestSubagentCompactsWhenItsContextFills(t *testing.T) {
	_, cwd := longSession(t, 0)
	child := scripted.Match{LacksTool: "Agent"}
	rules := append(readsBig(child, 14),
		scripted.Rule{Name: "main delegates", When: leadTurn(scripted.Match{UserText: "delegate"}), Reply: []scripted.Block{
			scripted.ToolUse("Agent", map[string]any{"description": "reader", "prompt": "read big.txt over and over", "subagent_type": "general-purpose"})}},
		scripted.Rule{Name: "main done", When: leadTurn(scripted.Match{ToolResult: "Agent"}), Reply: []scripted.Block{scripted.Text("delegated")}})
	h := newHarness(t, &scripted.Scenario{Rules: rules}, Options{Cwd: cwd, ContextWindow: 30_000, PermissionMode: "bypassPermissions", SettingsArgs: noClearing})
	events := h.send(t, "delegate")
	if res := result(t, events); res.Text != "delegated" {
		t.Fatalf("result %q", res.Text)
	}
	if !compactedBy(events, "general-purpose") {
		t.Error("the subagent's history outgrew the window and it did not compact")
	}
	if compactedBy(events, "") {
		t.Error("the main agent compacted; only the subagent's history was long")
	}
}

// A subagent clears its stale tool results as the main agent does: its later requests carry
// stubs for its oldest Reads, so its history stays below the compaction threshold.
func TestSubagentClearsStaleToolResults(t *testing.T) {
	_, cwd := longSession(t, 0)
	child := scripted.Match{LacksTool: "Agent"}
	rules := append(readsBig(child, 14),
		scripted.Rule{Name: "main delegates", When: leadTurn(scripted.Match{UserText: "delegate"}), Reply: []scripted.Block{
			scripted.ToolUse("Agent", map[string]any{"description": "reader", "prompt": "read big.txt over and over", "subagent_type": "general-purpose"})}},
		scripted.Rule{Name: "main done", When: leadTurn(scripted.Match{ToolResult: "Agent"}), Reply: []scripted.Block{scripted.Text("delegated")}})
	h := newHarness(t, &scripted.Scenario{Rules: rules}, Options{Cwd: cwd, ContextWindow: 60_000, PermissionMode: "bypassPermissions"})
	events := h.send(t, "delegate")
	if res := result(t, events); res.Text != "delegated" {
		t.Fatalf("result %q", res.Text)
	}
	stubbed := 0
	for _, r := range h.srv.Requests() {
		if strings.Contains(string(r.Body), `"name":"Agent"`) {
			continue
		}
		if strings.Contains(string(r.Body), clearing.StubPrefix) {
			stubbed++
		}
	}
	if stubbed == 0 {
		t.Error("the subagent's requests carry no stub of a cleared tool result")
	}
	if compactedBy(events, "general-purpose") {
		t.Error("the subagent compacted although clearing kept its history small")
	}
	for _, e := range events {
		if b, ok := e.(event.CacheBreak); ok {
			t.Errorf("cache break reported: %s: %s (%s)", b.Segment, b.Reason, b.Origin.AgentName)
		}
	}
}

// A teammate whose history outgrows the window compacts too.
func TestTeammateCompactsWhenItsContextFills(t *testing.T) {
	_, cwd := longSession(t, 0)
	rules := append(readsBig(mateIs("alice"), 14),
		scripted.Rule{Name: "lead spawns", When: leadTurn(scripted.Match{UserText: "start the team"}), Reply: []scripted.Block{
			scripted.ToolUse("Agent", map[string]any{"description": "reader", "prompt": "read big.txt over and over", "name": "alice"})}},
		scripted.Rule{Name: "lead waits", When: leadTurn(scripted.Match{ToolResult: "Agent"}), Reply: []scripted.Block{scripted.Text("alice reads")}})
	sc := &scripted.Scenario{Rules: rules, Fallback: &scripted.Rule{Reply: []scripted.Block{scripted.Text("noted")}}}
	h := newHarness(t, sc, Options{Cwd: cwd, ContextWindow: 30_000, PermissionMode: "bypassPermissions", SettingsArgs: noClearing,
		Team: TeamOptions{Enabled: true, ShutdownTimeout: waittest.Timeout()}})
	var mu sync.Mutex
	var idle []event.Event
	h.sess.agents.SetIdleEvents(func(e event.Event) {
		mu.Lock()
		defer mu.Unlock()
		idle = append(idle, e)
	})
	events := h.send(t, "start the team")
	events = append(events, drain(t, h.sess)...)
	mu.Lock()
	events = append(events, idle...)
	mu.Unlock()
	if !compactedBy(events, "alice") {
		t.Error("alice's history outgrew the window and she did not compact")
	}
}

// A cache break in a child's requests is reported, with the child as its origin: here a
// tool the child's MCP server adds mid-run changes its tool list.
func TestCacheBreakInAChildIsReported(t *testing.T) {
	srv := mcptest.New()
	child := scripted.Match{LacksTool: "Agent"}
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "child grows", When: child, Times: 1, Reply: []scripted.Block{scripted.ToolUse("mcp__t__add_tool", map[string]string{"name": "fresh"})}},
		{Name: "child done", When: child, Reply: []scripted.Block{scripted.Text("child done")}},
		{Name: "main delegates", When: leadTurn(scripted.Match{UserText: "delegate"}), Reply: []scripted.Block{
			scripted.ToolUse("Agent", map[string]any{"description": "grower", "prompt": "grow a tool", "subagent_type": "general-purpose"})}},
		{Name: "main done", When: leadTurn(scripted.Match{ToolResult: "Agent"}), Reply: []scripted.Block{scripted.Text("delegated")}},
	}}
	h := newHarness(t, sc, Options{PermissionMode: "bypassPermissions",
		MCP: MCPOptions{ToolSearch: "off", InProcess: map[string]*mcp.Server{"t": srv.Server}}})
	if breaks, ok := cacheBreakOf(h.send(t, "delegate"), "general-purpose", "mcp__t__fresh"); !ok {
		t.Errorf("cache breaks %+v; want the subagent's, naming the tool added to its list", breaks)
	}
}

// --max-budget-usd counts what the children of a turn spend while they run: a subagent
// that overspends is stopped, and so is the turn that started it.
func TestBudgetStopsATurnWhoseChildrenOverspend(t *testing.T) {
	_, cwd := longSession(t, 0)
	child := scripted.Match{LacksTool: "Agent"}
	rules := append(readsBig(child, 20),
		scripted.Rule{Name: "main delegates", When: leadTurn(scripted.Match{UserText: "delegate"}), Reply: []scripted.Block{
			scripted.ToolUse("Agent", map[string]any{"description": "reader", "prompt": "read big.txt over and over", "subagent_type": "general-purpose"})}},
		scripted.Rule{Name: "main goes on", When: leadTurn(scripted.Match{ToolResult: "Agent"}), Reply: []scripted.Block{
			scripted.ToolUse("Read", map[string]string{"file_path": "big.txt"})}},
		scripted.Rule{Name: "main done", When: leadTurn(scripted.Match{ToolResult: "Read"}), Reply: []scripted.Block{scripted.Text("all done")}})
	h := newHarness(t, &scripted.Scenario{Rules: rules}, Options{Cwd: cwd, PermissionMode: "bypassPermissions", SDK: SDKOptions{MaxBudgetUSD: 0.05}})
	res := result(t, h.send(t, "delegate"))
	if res.Subtype != "error_max_budget_usd" {
		t.Errorf("result %s (%q, $%.4f); want error_max_budget_usd", res.Subtype, res.Text, res.CostUSD)
	}
	if reads := childReadsUntil(t, h, "main goes on"); reads >= 20 {
		t.Errorf("the subagent read %d times; the budget should have stopped it", reads)
	}
}

// effort: xhigh in an agent definition reaches the child's requests as the xhigh thinking
// budget, as --effort xhigh does for the main agent.
func TestAgentDefinitionEffortXHigh(t *testing.T) {
	agents := `{"thinker":{"description":"thinks hard","prompt":"think","effort":"xhigh"}}`
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "child", When: scripted.Match{LacksTool: "Agent"}, Reply: []scripted.Block{scripted.Text("thought")}},
		{Name: "main delegates", When: leadTurn(scripted.Match{UserText: "think"}), Reply: []scripted.Block{
			scripted.ToolUse("Agent", map[string]any{"description": "thinker", "prompt": "think hard", "subagent_type": "thinker"})}},
		{Name: "main done", When: leadTurn(scripted.Match{ToolResult: "Agent"}), Reply: []scripted.Block{scripted.Text("done")}},
	}}
	h := newHarness(t, sc, Options{Agents: agents})
	for _, n := range h.sess.Notices() {
		t.Logf("notice: %s", n.Text)
	}
	result(t, h.send(t, "think"))
	var thinking *struct {
		BudgetTokens int64 `json:"budget_tokens"`
	}
	for _, r := range h.srv.Requests() {
		if r.Rule != "child" {
			continue
		}
		var body struct {
			Thinking *struct {
				BudgetTokens int64 `json:"budget_tokens"`
			} `json:"thinking"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		thinking = body.Thinking
	}
	if thinking == nil || thinking.BudgetTokens != 24576 {
		t.Errorf("the thinker's request asks for thinking %+v; want the xhigh budget of 24576 tokens", thinking)
	}
}

// When opening fails after the MCP servers started (here: the session to resume does not
// exist), nothing New started is left running.
func TestFailedOpenLeavesNoProcessBehind(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	exe, args, env := mcptest.Command(mcptest.ModeEverything)
	script := "echo $$ > " + pidFile + "; exec " + exe + " " + strings.Join(args, " ")
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"hang": map[string]any{
		"command": "sh", "args": []string{"-c", script}, "env": env}}})
	srv, err := scripted.Start(t.Context(), "", &scripted.Scenario{}, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	_, err = openForTest(t, srv, Options{Home: t.TempDir(), Trust: true, Resume: "0b6c5e7e-0000-4000-8000-00000000dead",
		MCP: MCPOptions{Configs: []string{string(cfg)}}})
	if err == nil {
		t.Fatal("opening a session that does not exist succeeded")
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the MCP server never started, so the test proves nothing: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if syscall.Kill(pid, 0) == nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the MCP server (pid %d) still runs after New failed", pid)
	}
}

// cacheBreakOf returns the cache breaks among events and whether one is agent's, naming what.
func cacheBreakOf(events []event.Event, agent, what string) ([]event.CacheBreak, bool) {
	var breaks []event.CacheBreak
	found := false
	for _, e := range events {
		if b, ok := e.(event.CacheBreak); ok {
			breaks = append(breaks, b)
			found = found || (b.Origin.AgentName == agent && strings.Contains(b.Reason, what))
		}
	}
	return breaks, found
}

// childReadsUntil counts the requests of the "child reads" rules (readsBig) and fails the test
// if the parent's rule next, which only a turn the budget did not stop reaches, was asked.
func childReadsUntil(t *testing.T, h *harness, next string) int {
	t.Helper()
	reads := 0
	for _, r := range h.srv.Requests() {
		if strings.HasPrefix(r.Rule, "child reads") {
			reads++
		}
		if r.Rule == next {
			t.Errorf("%q was asked after a child had spent the budget", next)
		}
	}
	return reads
}
