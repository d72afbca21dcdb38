package tui

import (
	"context"
	"strings"
	"testing"

	"github.com/keel-dev/keel"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

// TestTeamView drives a real session with a team: the panel shows the teammate, a message
// from it wakes the idle lead, /team NAME shows its work, and what is typed there reaches it.
func TestTeamView(t *testing.T) {
	alice := func(m scripted.Match) scripted.Match { m.System = "Your name in the team is alice."; return m }
	lead := func(m scripted.Match) scripted.Match { m.HasTool = "Agent"; return m }
	rules := []scripted.Rule{
		{When: alice(scripted.Match{UserText: "say hello"}), Reply: []scripted.Block{
			scripted.ToolUse("SendMessage", map[string]any{"to": "team-lead", "message": "hello lead", "summary": "greeting"})}},
		{When: alice(scripted.Match{ToolResult: "SendMessage"}), Reply: []scripted.Block{scripted.Text("said hello")}},
		{When: alice(scripted.Match{UserText: "keep going"}), Reply: []scripted.Block{scripted.Text("going on, as asked")}},
		{When: lead(scripted.Match{UserText: "start a team"}), Reply: []scripted.Block{
			scripted.ToolUse("Agent", map[string]any{"description": "greeter", "prompt": "say hello", "name": "alice"})}},
		{When: lead(scripted.Match{UserText: `teammate_id="alice"`}), Reply: []scripted.Block{scripted.Text("thanks alice")}},
		{When: lead(scripted.Match{ToolResult: "Agent"}), Reply: []scripted.Block{scripted.Text("alice started")}},
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := scripted.Start(ctx, "", &scripted.Scenario{Rules: rules}, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	sess, err := keel.New(ctx, keel.Options{Cwd: t.TempDir(), Home: t.TempDir(), Model: "claude-test", APIKey: "test", BaseURL: srv.URL(), Teams: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	m := New(Config{Backend: teamSession{sess}, Prompt: "start a team", NoColor: true, Version: "test"})
	defer m.Close()
	d := newDriver(t, m)
	sess.OnIdleEvents(func(e keel.Event) { d.msgs <- idleEventMsg{e} })
	d.run(m.Init())
	// The lead's answer, alice's message and alice's own last words arrive in any order.
	containsAll := func(got string, wants ...string) bool {
		for _, w := range wants {
			if !strings.Contains(got, w) {
				return false
			}
		}
		return true
	}
	d.until(func() bool {
		return containsAll(frame(m), "thanks alice", "Team (/team)", "✉ alice → team-lead: greeting")
	})
	d.until(func() bool { return strings.Contains(frame(m), "alice · idle") })
	typeKeys(m, "/team alice")
	_, cmd := m.Update(press("enter"))
	d.run(cmd)
	// Her last reply may still be on its way when her idle state shows (GOMAXPROCS=1).
	d.until(func() bool { return strings.Contains(frame(m), "said hello") })
	got := frame(m)
	if !strings.Contains(got, "● alice") || strings.Contains(got, "thanks alice") {
		t.Fatalf("the teammate view does not show alice's work alone:\n%s", got)
	}
	typeKeys(m, "keep going")
	_, cmd = m.Update(press("enter"))
	d.run(cmd)
	d.until(func() bool { return strings.Contains(frame(m), "going on, as asked") })
	typeKeys(m, "/team lead")
	_, cmd = m.Update(press("enter"))
	d.run(cmd)
	if got := frame(m); !strings.Contains(got, "thanks alice") {
		t.Errorf("/team lead did not come back to the lead's transcript:\n%s", got)
	}
}

// teamSession adapts *keel.Session to Teamer, as internal/interactive does for the program.
type teamSession struct{ *keel.Session }

func (s teamSession) TeamMembers(ctx context.Context) []TeamMember {
	ms, _ := s.Session.TeamMembers(ctx)
	var out []TeamMember
	for _, m := range ms {
		out = append(out, TeamMember{Name: m.Name, Color: m.Color, State: m.State, Task: m.Task, Runner: m.Runner, AgentID: m.AgentID})
	}
	return out
}

func (s teamSession) TeamTasks(ctx context.Context) []TeamTask {
	ts, _ := s.Session.TeamTasks(ctx)
	var out []TeamTask
	for _, t := range ts {
		out = append(out, TeamTask{ID: t.ID, Subject: t.Subject, Status: t.Status, Owner: t.Owner, BlockedBy: t.BlockedBy})
	}
	return out
}
