package session

import (
	"strings"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/team"
	"github.com/keel-dev/keel/internal/waittest"
)

func mateIs(name string) scripted.Match {
	return scripted.Match{System: "Your name in the team is " + name + "."}
}

// leadTurn matches the lead's requests (it alone has the Agent tool).
func leadTurn(m scripted.Match) scripted.Match {
	m.HasTool = "Agent"
	return m
}

// teamScenario: the lead puts two tasks on the board and spawns alice; alice takes both
// from the board by herself, completes them and reports to the lead, who wraps up.
func teamScenario() *scripted.Scenario {
	alice := func(m scripted.Match) scripted.Match { m.System = mateIs("alice").System; return m }
	return &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "alice starts", When: alice(scripted.Match{UserText: "help with the board"}), Reply: []scripted.Block{scripted.Text("ready for tasks")}},
		{Name: "alice task 1", When: alice(scripted.Match{UserText: `<task-assignment id="1"`}),
			Reply: []scripted.Block{scripted.ToolUse("TaskUpdate", map[string]any{"taskId": "1", "status": "completed"})}},
		{Name: "alice task 2", When: alice(scripted.Match{UserText: `<task-assignment id="2"`}),
			Reply: []scripted.Block{scripted.ToolUse("TaskUpdate", map[string]any{"taskId": "2", "status": "completed"})}},
		{Name: "alice after 1", When: alice(scripted.Match{ToolResult: "TaskUpdate", Contains: "Updated task #1"}), Reply: []scripted.Block{scripted.Text("done with 1")}},
		{Name: "alice after 2", When: alice(scripted.Match{ToolResult: "TaskUpdate", Contains: "Updated task #2"}),
			Reply: []scripted.Block{scripted.ToolUse("SendMessage", map[string]any{"to": "team-lead", "message": "both tasks are done", "summary": "done"})}},
		{Name: "alice reported", When: alice(scripted.Match{ToolResult: "SendMessage"}), Reply: []scripted.Block{scripted.Text("reported")}},

		{Name: "lead plans", When: leadTurn(scripted.Match{UserText: "build the thing"}), Reply: []scripted.Block{
			scripted.ToolUse("TaskCreate", map[string]any{"subject": "write part a"}),
			scripted.ToolUse("TaskCreate", map[string]any{"subject": "write part b", "description": "after a"})}},
		{Name: "lead links", When: leadTurn(scripted.Match{ToolResult: "TaskCreate"}), Reply: []scripted.Block{
			scripted.ToolUse("TaskUpdate", map[string]any{"taskId": "2", "addBlockedBy": []string{"1"}})}},
		{Name: "lead spawns", When: leadTurn(scripted.Match{ToolResult: "TaskUpdate"}), Reply: []scripted.Block{
			scripted.ToolUse("Agent", map[string]any{"description": "board worker", "prompt": "help with the board", "name": "alice", "team_name": "ignored"})}},
		{Name: "lead waits", When: leadTurn(scripted.Match{ToolResult: "Agent"}), Reply: []scripted.Block{scripted.Text("alice is on it")}},
		{Name: "lead wraps up", When: leadTurn(scripted.Match{UserText: `<teammate-message teammate_id="alice"`}), Reply: []scripted.Block{scripted.Text("the team finished")}},
	}}
}

// drain runs the headless lead's wait loop: like keel -p, turns for whatever wakes the lead
// until the team settles.
func drain(t *testing.T, s *Session) []event.Event {
	t.Helper()
	ctx := waittest.Context(t)
	var events []event.Event
	for {
		n, err := s.WaitBackground(ctx)
		if err != nil {
			t.Fatalf("wait for the team: %v", err)
		}
		if n == 0 {
			return events
		}
		for e, err := range s.SendPending(ctx) {
			if err != nil {
				t.Fatalf("lead turn: %v", err)
			}
			events = append(events, e)
		}
	}
}

func TestTeamLeadSpawnsTeammateThatWorksTheBoard(t *testing.T) {
	h := newHarness(t, teamScenario(), Options{Team: TeamOptions{Enabled: true, Lease: 2 * time.Second, ShutdownTimeout: waittest.Timeout()}})
	events := h.send(t, "build the thing")
	if r := result(t, events); r.IsError || r.Text != "alice is on it" {
		t.Fatalf("first turn: %+v", r)
	}
	for _, name := range []string{"TaskCreate", "TaskGet", "TaskList", "TaskUpdate", "ListAgents", "SendMessage", "Agent"} {
		if !strings.Contains(strings.Join(h.sess.ToolNames(), " "), name) {
			t.Errorf("the lead's tools lack %s: %v", name, h.sess.ToolNames())
		}
	}
	more := drain(t, h.sess)
	for _, r := range ruleNames(h) {
		if r == "fallback" {
			t.Errorf("a request matched no rule: %v", ruleNames(h))
		}
	}
	if r := result(t, more); r.Text != "the team finished" {
		t.Errorf("the lead's wrap-up: %+v", r)
	}
	tm := h.sess.Team()
	tasks, err := tm.Backend().Board().List(waittest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range tasks {
		if tk.Status != coord.StatusCompleted || tk.Owner != "alice" {
			t.Errorf("task %s is %s, owned by %q; want completed by alice", tk.ID, tk.Status, tk.Owner)
		}
	}
	members, _ := tm.Members(waittest.Context(t))
	var alice team.MemberInfo
	for _, m := range members {
		if m.Name == "alice" {
			alice = m
		}
	}
	if alice.State != team.StateStopped || alice.Color != "blue" {
		t.Errorf("alice after the run: %+v; want stopped (shut down once the team settled), colour blue", alice)
	}
	// Teammate events reach the lead's stream with the teammate's agent id.
	var fromAlice, states int
	for _, e := range append(events, more...) {
		if e.From().AgentName == "alice" && e.From().AgentID == alice.AgentID {
			fromAlice++
		}
		if _, ok := e.(event.TeammateState); ok {
			states++
		}
	}
	if fromAlice == 0 || states == 0 {
		t.Errorf("events from alice: %d, teammate state events: %d; want both", fromAlice, states)
	}
}

func TestTeamsAreOffByDefault(t *testing.T) {
	h := newHarness(t, &scripted.Scenario{}, Options{})
	names := strings.Join(h.sess.ToolNames(), " ")
	for _, name := range []string{"TaskCreate", "ListAgents"} {
		if strings.Contains(names, name) {
			t.Errorf("without teams the pool has %s: %s", name, names)
		}
	}
	if h.sess.Team() != nil {
		t.Error("a team exists without teams enabled")
	}
}

func TestTeamsEnabledByClaudeCodeEnvSetting(t *testing.T) {
	h := newHarness(t, &scripted.Scenario{}, Options{SettingsArgs: []string{`{"env":{"CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS":"1"}}`}})
	if h.sess.Team() == nil {
		t.Fatal("CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1 in settings did not enable teams")
	}
}

func ruleNames(h *harness) []string {
	var out []string
	for _, r := range h.srv.Requests() {
		out = append(out, r.Rule)
	}
	return out
}
