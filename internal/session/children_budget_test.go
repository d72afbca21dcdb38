package session

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/waittest"
)

// An agent started once the session's budget is spent asks the model nothing: the main
// agent's first request costs more than --max-budget-usd and starts a child of each kind;
// the child's run ends before its first request, and the main agent is not asked again. (The
// main agent answers each prompt once whatever the budget, as Claude Code does; every other
// agent runs within a turn the budget already governs.) A TeammateIdle hook that always asks
// for more work does not keep a teammate the budget stopped going: the team settles.
func TestBudgetSpentBeforeAChildStartsStopsIt(t *testing.T) {
	dir := t.TempDir()
	idleLog := filepath.Join(dir, "idle.log")
	keepGoing := writeHook(t, dir, "idle.sh", "cat >> "+idleLog+"; echo 'keep working' >&2; exit 2")
	hooks := `{"hooks":{"TeammateIdle":[{"hooks":[{"type":"command","command":"` + keepGoing + `"}]}]}}`
	team := TeamOptions{Enabled: true, ShutdownTimeout: waittest.Timeout()}
	for _, tt := range []struct {
		name  string
		start map[string]any
		child scripted.Match
		opts  Options
	}{
		{"subagent", map[string]any{"subagent_type": "general-purpose"}, scripted.Match{LacksTool: "Agent"}, Options{}},
		{"fork", nil, scripted.Match{UserText: "<keel-fork-directive>"}, Options{ForkSubagents: true}},
		{"background", map[string]any{"subagent_type": "general-purpose", "run_in_background": true}, scripted.Match{LacksTool: "Agent"}, Options{}},
		{"teammate", map[string]any{"name": "alice"}, mateIs("alice"), Options{Team: team}},
		{"teammate kept going", map[string]any{"name": "alice"}, mateIs("alice"), Options{Team: team, SettingsArgs: []string{hooks}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			call := map[string]any{"description": "worker", "prompt": "do the work"}
			for k, v := range tt.start {
				call[k] = v
			}
			sc := &scripted.Scenario{Rules: []scripted.Rule{
				{Name: "child works", When: tt.child, Reply: []scripted.Block{scripted.Text("child done")}},
				{Name: "main starts", When: leadTurn(scripted.Match{UserText: "delegate"}), Reply: []scripted.Block{scripted.ToolUse("Agent", call)}},
				{Name: "main reads the report", When: leadTurn(scripted.Match{Contains: "<task-notification>"}), Reply: []scripted.Block{scripted.Text("noted")}},
				{Name: "main goes on", When: leadTurn(scripted.Match{ToolResult: "Agent"}), Reply: []scripted.Block{scripted.Text("all done")}},
			}, Fallback: &scripted.Rule{Reply: []scripted.Block{scripted.Text("noted")}}}
			opts := tt.opts
			opts.PermissionMode, opts.SDK.MaxBudgetUSD = "bypassPermissions", 0.01
			h := newHarness(t, sc, opts)
			events := sendAndSettle(t, h, "delegate")
			if res := results(events); len(res) == 0 || res[0].Subtype != "error_max_budget_usd" {
				t.Errorf("results %+v; want the first to end at the budget", res)
			}
			for _, r := range h.srv.Requests() {
				switch r.Rule {
				case "child works":
					t.Errorf("the %s asked the model (request %d) after the budget was spent", tt.name, r.N)
				case "main goes on":
					t.Error("the main agent was asked again after it had spent the budget")
				}
			}
			if b, _ := os.ReadFile(idleLog); len(b) > 0 {
				t.Errorf("a TeammateIdle hook was asked to keep a teammate going that the budget had stopped:\n%s", b)
			}
			if first := h.srv.Requests()[0].Rule; first != "main starts" {
				t.Fatalf("the first request was answered by %q: the test proves nothing", first)
			}
		})
	}
}
