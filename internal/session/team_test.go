package session

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/permission"
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
	var events []event.Event
	for {
		// Each wait and the turn it wakes have their own time limit: the whole team run takes
		// longer than one on a loaded machine.
		ctx := waittest.Context(t)
		n, err := s.agents.WaitBackground(ctx)
		if err != nil {
			t.Fatalf("wait for the team: %v", err)
		}
		if n == 0 {
			return events
		}
		for e, err := range s.agents.SendPending(ctx) {
			if err != nil {
				t.Fatalf("lead turn: %v", err)
			}
			events = append(events, e)
		}
	}
}

func TestTeamLeadSpawnsTeammateThatWorksTheBoard(t *testing.T) {
	h := newHarness(t, teamScenario(), Options{Team: TeamOptions{Enabled: true, Lease: waittest.Scale(2 * time.Second), ShutdownTimeout: waittest.Timeout()}})
	var idleMu sync.Mutex
	var idle []event.Event
	h.sess.agents.SetIdleEvents(func(e event.Event) {
		idleMu.Lock()
		defer idleMu.Unlock()
		idle = append(idle, e)
	})
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
	// The team was shut down before the wait returned, and its members' last events with it
	// (not trickling in later, below whatever the caller prints next).
	idleMu.Lock()
	stopped := slices.ContainsFunc(append(more, idle...), func(e event.Event) bool {
		s, ok := e.(event.TeammateState)
		return ok && s.Name == "alice" && s.State == string(team.StateStopped)
	})
	idleMu.Unlock()
	if !stopped {
		t.Error("the wait for the team returned before alice's stopped state was emitted")
	}
	tm := h.sess.Team().Current()
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
	if h.sess.Team().Current() != nil {
		t.Error("a team exists without teams enabled")
	}
}

func TestTeamsEnabledByClaudeCodeEnvSetting(t *testing.T) {
	h := newHarness(t, &scripted.Scenario{}, Options{SettingsArgs: []string{`{"env":{"CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS":"1"}}`}})
	if h.sess.Team().Current() == nil {
		t.Fatal("CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1 in settings did not enable teams")
	}
}

// TestJobSessionDoesNotLeadTheTeam: a supervisor's job session (background agent, scheduled
// run) opened where settings switch teams on does not open the launcher's team as its lead.
func TestJobSessionDoesNotLeadTheTeam(t *testing.T) {
	settings := `{"env":{"CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS":"1"}}`
	h := newHarness(t, &scripted.Scenario{}, Options{SettingsArgs: []string{settings},
		DetachedFrom: filepath.Join(t.TempDir(), "launcher.jsonl")})
	if h.sess.Team().Current() != nil {
		t.Fatal("a job session opened the team as its lead")
	}
}

func ruleNames(h *harness) []string {
	var out []string
	for _, r := range h.srv.Requests() {
		out = append(out, r.Rule)
	}
	return out
}

// A session whose team was mid-work ends abruptly; --continue brings the teammate back with
// its history and the task it held, and it finishes the task.
func TestTeamResumesTeammateWithHistoryAndTask(t *testing.T) {
	alice := func(m scripted.Match) scripted.Match { m.System = mateIs("alice").System; return m }
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "alice starts", When: alice(scripted.Match{UserText: "work the board"}), Reply: []scripted.Block{scripted.Text("ready, remembering the number 4711")}},
		{Name: "alice stalls", Times: 1, When: alice(scripted.Match{UserText: `<task-assignment id="1"`}),
			Reply: []scripted.Block{scripted.Text("working")}, Fault: &scripted.Fault{Delay: 10 * time.Minute}},
		{Name: "alice resumes", When: alice(scripted.Match{UserText: `<task-assignment id="1"`}),
			Reply: []scripted.Block{scripted.ToolUse("TaskUpdate", map[string]any{"taskId": "1", "status": "completed"})}},
		{Name: "alice done", When: alice(scripted.Match{ToolResult: "TaskUpdate"}), Reply: []scripted.Block{scripted.Text("finished")}},
		{Name: "lead starts", When: leadTurn(scripted.Match{UserText: "start"}), Reply: []scripted.Block{
			scripted.ToolUse("TaskCreate", map[string]any{"subject": "the task"}),
			scripted.ToolUse("Agent", map[string]any{"description": "worker", "prompt": "work the board", "name": "alice"})}},
		{Name: "lead waits", When: leadTurn(scripted.Match{ToolResult: "Agent"}), Reply: []scripted.Block{scripted.Text("started")}},
		{Name: "lead continues", When: leadTurn(scripted.Match{UserText: "how is it going"}), Reply: []scripted.Block{scripted.Text("fine")}},
	}}
	srv, err := scripted.Start(t.Context(), "", sc, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	home, cwd := t.TempDir(), t.TempDir()
	opts := Options{Home: home, Cwd: cwd, Team: TeamOptions{Enabled: true, Lease: time.Minute, ShutdownTimeout: waittest.Timeout()}}
	first := newHarnessOn(t, srv, opts)
	first.send(t, "start")
	waittest.Until(t, "alice to be mid-task", func() bool { return slicesContains(ruleNames(first), "alice stalls") })
	if err := first.sess.Close(); err != nil {
		t.Fatal(err)
	}

	opts.Continue = true
	second := newHarnessOn(t, srv, opts)
	events := second.send(t, "how is it going")
	var resumed bool
	for _, e := range events {
		if n, ok := e.(event.Notice); ok && strings.Contains(n.Text, "resumed alice") {
			resumed = true
		}
	}
	if !resumed {
		t.Errorf("no notice that alice was resumed among %d events", len(events))
	}
	drain(t, second.sess)
	tk, err := second.sess.Team().Current().Backend().Board().Get(waittest.Context(t), "1")
	if err != nil || tk.Status != coord.StatusCompleted || tk.Owner != "alice" {
		t.Fatalf("task 1 after resume: %+v, %v; want completed by alice", tk, err)
	}
	// Her resumed request carried her earlier history.
	var carried bool
	for _, r := range srv.Requests() {
		if r.Rule == "alice resumes" && strings.Contains(string(r.Body), "remembering the number 4711") {
			carried = true
		}
	}
	if !carried {
		t.Error("alice's request after the resume does not hold her history")
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// permScenario: the lead spawns alice, who runs two shell commands that need approval.
func permScenario(extra ...scripted.Rule) *scripted.Scenario {
	alice := func(m scripted.Match) scripted.Match { m.System = mateIs("alice").System; return m }
	rules := append(extra,
		scripted.Rule{Name: "alice touches a", When: alice(scripted.Match{UserText: "make the files"}),
			Reply: []scripted.Block{scripted.ToolUse("Bash", map[string]any{"command": "touch a.txt"})}},
		scripted.Rule{Name: "alice touches b", When: alice(scripted.Match{ToolResult: "Bash", Contains: "(no output)"}), Times: 1,
			Reply: []scripted.Block{scripted.ToolUse("Bash", map[string]any{"command": "touch b.txt"})}},
		scripted.Rule{Name: "alice denied", When: alice(scripted.Match{ToolResult: "Bash", Contains: "denied"}), Reply: []scripted.Block{scripted.Text("I was not allowed")}},
		scripted.Rule{Name: "alice done", When: alice(scripted.Match{ToolResult: "Bash"}), Reply: []scripted.Block{scripted.Text("files made")}},
		scripted.Rule{Name: "lead spawns", When: leadTurn(scripted.Match{UserText: "go"}), Reply: []scripted.Block{
			scripted.ToolUse("Agent", map[string]any{"description": "maker", "prompt": "make the files", "name": "alice"})}},
		scripted.Rule{Name: "lead waits", When: leadTurn(scripted.Match{ToolResult: "Agent"}), Reply: []scripted.Block{scripted.Text("waiting")}},
	)
	return &scripted.Scenario{Rules: rules}
}

// Level 1: a teammate's question goes to the lead's UI, labelled with its name and colour;
// "always allow" adds the rule for the teammate's later calls.
func TestTeamPermissionAsksLeadUI(t *testing.T) {
	var asks []permission.AskRequest
	var mu sync.Mutex
	asker := permission.AskerFunc(func(ctx context.Context, r permission.AskRequest) (permission.Answer, error) {
		mu.Lock()
		asks = append(asks, r)
		mu.Unlock()
		rule, _ := permission.ParseRule("Bash(touch:*)", permission.Allow, permission.Source{Name: "session"})
		return permission.AllowAlways(rule), nil
	})
	h := newHarness(t, permScenario(), Options{Asker: asker, Team: TeamOptions{Enabled: true, ShutdownTimeout: waittest.Timeout()}})
	h.send(t, "go")
	drain(t, h.sess)
	mu.Lock()
	defer mu.Unlock()
	if len(asks) != 1 {
		t.Fatalf("the lead's UI was asked %d times, want once (the second touch is covered by the always rule)", len(asks))
	}
	if a := asks[0]; a.Agent.Name != "alice" || a.Agent.Color != "blue" || a.Request.Command != "touch a.txt" {
		t.Errorf("ask = %+v; want alice's touch a.txt, labelled alice/blue", a)
	}
	for _, f := range []string{"a.txt", "b.txt"} {
		if _, err := os.Stat(filepath.Join(h.sess.Cwd(), f)); err != nil {
			t.Errorf("%s was not made: %v", f, err)
		}
	}
}

// Level 2 without a lead UI: the question reaches the lead's model as a message, and its
// permission_response decides; a denial reaches the teammate as a denial.
func TestTeamPermissionThroughLeadModel(t *testing.T) {
	for _, tc := range []struct {
		name    string
		approve bool
		want    string
	}{{"approved", true, "files made"}, {"denied", false, "I was not allowed"}} {
		t.Run(tc.name, func(t *testing.T) {
			answer := scripted.Rule{Name: "lead answers", When: leadTurn(scripted.Match{UserText: `type="permission_request"`}), Times: 1,
				Reply: []scripted.Block{scripted.ToolUse("SendMessage", map[string]any{"to": "alice",
					"message": map[string]any{"type": "permission_response", "approve": tc.approve, "always": true, "reason": "not now"}})}}
			after := scripted.Rule{Name: "lead answered", When: leadTurn(scripted.Match{ToolResult: "SendMessage"}), Reply: []scripted.Block{scripted.Text("answered")}}
			h := newHarness(t, permScenario(answer, after), Options{Team: TeamOptions{Enabled: true, ShutdownTimeout: waittest.Timeout()}})
			h.send(t, "go")
			drain(t, h.sess)
			if !slicesContains(ruleNames(h), "lead answers") {
				t.Fatalf("the lead's model never saw the request: %v", ruleNames(h))
			}
			var final string
			for _, r := range h.srv.Requests() {
				if strings.HasPrefix(r.Rule, "alice") {
					final = r.Rule
				}
			}
			if want := map[bool]string{true: "alice done", false: "alice denied"}[tc.approve]; final != want {
				t.Errorf("alice's last turn was %q, want %q (rules: %v)", final, want, ruleNames(h))
			}
			_, err := os.Stat(filepath.Join(h.sess.Cwd(), "b.txt"))
			if tc.approve && err != nil {
				t.Errorf("approved always, yet b.txt was not made: %v", err)
			}
		})
	}
}

// A headless lead's model that ends its turn without answering a teammate's permission
// request is asked once more; ending the next turn without an answer denies the request, so
// the team does not wait out the permission timeout (ten minutes) on nobody.
func TestTeamPermissionUnansweredIsChased(t *testing.T) {
	for _, tc := range []struct {
		name      string
		answers   bool
		wantAlice string
	}{{"answered after the reminder", true, "alice done"}, {"ignored twice", false, "alice denied"}} {
		t.Run(tc.name, func(t *testing.T) {
			extra := []scripted.Rule{{Name: "lead ignores", When: leadTurn(scripted.Match{UserText: "asks for permission"}), Times: 1,
				Reply: []scripted.Block{scripted.Text("noted")}}}
			reminder := scripted.Rule{Name: "lead reminded", When: leadTurn(scripted.Match{UserText: "still blocked waiting for your answer"}),
				Reply: []scripted.Block{scripted.Text("noted again")}}
			if tc.answers {
				reminder.Times = 1
				reminder.Reply = []scripted.Block{scripted.ToolUse("SendMessage", map[string]any{"to": "alice",
					"message": map[string]any{"type": "permission_response", "approve": true, "always": true}})}
				extra = append(extra, scripted.Rule{Name: "lead answered", When: leadTurn(scripted.Match{ToolResult: "SendMessage"}),
					Reply: []scripted.Block{scripted.Text("answered")}})
			}
			h := newHarness(t, permScenario(append(extra, reminder)...), Options{Team: TeamOptions{Enabled: true, ShutdownTimeout: waittest.Timeout()}})
			h.send(t, "go")
			drain(t, h.sess)
			rules := ruleNames(h)
			if !slicesContains(rules, "lead ignores") || !slicesContains(rules, "lead reminded") {
				t.Fatalf("the lead was not asked, then reminded: %v", rules)
			}
			var final string
			for _, r := range h.srv.Requests() {
				if strings.HasPrefix(r.Rule, "alice") {
					final = r.Rule
				}
				if r.Rule == "alice denied" && !strings.Contains(string(r.Body), "ended its turn twice without answering") {
					t.Errorf("alice's denial does not say why: %s", r.Body)
				}
			}
			if final != tc.wantAlice {
				t.Errorf("alice's last turn was %q, want %q (rules: %v)", final, tc.wantAlice, rules)
			}
		})
	}
}

// TaskCreated, TaskCompleted and TeammateIdle hooks: exit 2 refuses a task, keeps a task
// open, keeps a teammate working; each hook sees the team's fields on stdin.
func TestTeamHooks(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "inputs.log")
	created := writeHook(t, dir, "created.sh", `in=$(cat); echo "$in" >> `+log+`
case "$in" in *forbidden*) echo 'no forbidden tasks' >&2; exit 2;; esac`)
	// The first completion and the first idle are refused, later ones pass.
	completed := writeHook(t, dir, "completed.sh", `cat >> `+log+`; [ -f `+dir+`/c ] && exit 0; touch `+dir+`/c; echo 'tests fail' >&2; exit 2`)
	idle := writeHook(t, dir, "idle.sh", `cat >> `+log+`; [ -f `+dir+`/i ] && exit 0; touch `+dir+`/i; echo 'check your work' >&2; exit 2`)
	hook := func(cmd string) string { return `[{"hooks":[{"type":"command","command":"` + cmd + `"}]}]` }
	settings := `{"hooks":{"TaskCreated":` + hook(created) + `,"TaskCompleted":` + hook(completed) + `,"TeammateIdle":` + hook(idle) + `}}`
	alice := func(m scripted.Match) scripted.Match { m.System = mateIs("alice").System; return m }
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "alice starts", When: alice(scripted.Match{UserText: "start"}), Reply: []scripted.Block{scripted.Text("hi")}},
		{Name: "alice checks", When: alice(scripted.Match{UserText: "check your work"}), Reply: []scripted.Block{scripted.Text("checked")}},
		{Name: "alice completes", When: alice(scripted.Match{UserText: `<task-assignment id="2"`}),
			Reply: []scripted.Block{scripted.ToolUse("TaskUpdate", map[string]any{"taskId": "2", "status": "completed"})}},
		{Name: "alice retries", When: alice(scripted.Match{ToolResult: "TaskUpdate", Contains: "kept task 2 open: tests fail"}),
			Reply: []scripted.Block{scripted.ToolUse("TaskUpdate", map[string]any{"taskId": "2", "status": "completed"})}},
		{Name: "alice done", When: alice(scripted.Match{ToolResult: "TaskUpdate"}), Reply: []scripted.Block{scripted.Text("done")}},
		{Name: "lead tries", When: leadTurn(scripted.Match{UserText: "go"}), Reply: []scripted.Block{scripted.ToolUse("TaskCreate", map[string]any{"subject": "a forbidden thing"})}},
		{Name: "lead refused", When: leadTurn(scripted.Match{ToolResult: "TaskCreate", Contains: "no forbidden tasks"}), Reply: []scripted.Block{
			scripted.ToolUse("TaskCreate", map[string]any{"subject": "a fine thing"}),
			scripted.ToolUse("Agent", map[string]any{"description": "worker", "prompt": "start", "name": "alice"})}},
		{Name: "lead waits", When: leadTurn(scripted.Match{ToolResult: "Agent"}), Reply: []scripted.Block{scripted.Text("waiting")}},
	}}
	h := newHarness(t, sc, Options{SettingsArgs: []string{settings}, Team: TeamOptions{Enabled: true, ShutdownTimeout: waittest.Timeout()}})
	h.send(t, "go")
	drain(t, h.sess)
	for _, want := range []string{"lead refused", "alice checks", "alice retries", "alice done"} {
		if !slicesContains(ruleNames(h), want) {
			t.Errorf("rule %q never answered: %v", want, ruleNames(h))
		}
	}
	tasks, _ := h.sess.Team().Current().Backend().Board().List(waittest.Context(t))
	if len(tasks) != 1 || tasks[0].ID != "2" || tasks[0].Status != coord.StatusCompleted {
		t.Errorf("board: %+v; want only task 2 (the refused task 1 removed), completed", tasks)
	}
	inputs, _ := os.ReadFile(log)
	for _, want := range []string{`"hook_event_name":"TaskCreated"`, `"task_subject":"a fine thing"`, `"hook_event_name":"TaskCompleted"`,
		`"teammate_name":"alice"`, `"hook_event_name":"TeammateIdle"`, `"team_name":"team-`} {
		if !strings.Contains(string(inputs), want) {
			t.Errorf("hook inputs lack %s:\n%s", want, inputs)
		}
	}
}

// A teammate in plan mode may not write; it sends its plan to the lead, whose approval takes
// it out of plan mode (into the lead's mode), and the write then goes through.
func TestTeamPlanApproval(t *testing.T) {
	alice := func(m scripted.Match) scripted.Match { m.System = mateIs("alice").System; return m }
	write := scripted.ToolUse("Write", map[string]any{"file_path": "plan.txt", "content": "the plan\n"})
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "alice tries", When: alice(scripted.Match{UserText: "write the plan file"}), Reply: []scripted.Block{write}},
		{Name: "alice asks", When: alice(scripted.Match{ToolResult: "Write", Contains: "plan mode"}), Reply: []scripted.Block{
			scripted.ToolUse("SendMessage", map[string]any{"to": "team-lead", "message": map[string]any{"type": "plan_approval_request", "plan": "write plan.txt"}})}},
		{Name: "alice waits", When: alice(scripted.Match{ToolResult: "SendMessage"}), Reply: []scripted.Block{scripted.Text("waiting for approval")}},
		{Name: "alice approved", When: alice(scripted.Match{UserText: `type="plan_approval_response"`}), Reply: []scripted.Block{write}},
		{Name: "alice wrote", When: alice(scripted.Match{ToolResult: "Write"}), Reply: []scripted.Block{scripted.Text("written")}},
		{Name: "lead spawns", When: leadTurn(scripted.Match{UserText: "go"}), Reply: []scripted.Block{
			scripted.ToolUse("Agent", map[string]any{"description": "planner", "prompt": "write the plan file", "name": "alice", "mode": "plan"})}},
		{Name: "lead approves", When: leadTurn(scripted.Match{UserText: `type="plan_approval_request"`}), Reply: []scripted.Block{
			scripted.ToolUse("SendMessage", map[string]any{"to": "alice", "message": map[string]any{"type": "plan_approval_response", "approve": true}})}},
		{Name: "lead waits", When: leadTurn(scripted.Match{ToolResult: "Agent"}), Reply: []scripted.Block{scripted.Text("waiting")}},
		{Name: "lead done", When: leadTurn(scripted.Match{ToolResult: "SendMessage"}), Reply: []scripted.Block{scripted.Text("approved")}},
	}}
	h := newHarness(t, sc, Options{PermissionMode: "acceptEdits", Team: TeamOptions{Enabled: true, ShutdownTimeout: waittest.Timeout()}})
	h.send(t, "go")
	drain(t, h.sess)
	if got, err := os.ReadFile(filepath.Join(h.sess.Cwd(), "plan.txt")); err != nil || string(got) != "the plan\n" {
		t.Errorf("plan.txt = %q, %v; want it written after the approval (rules: %v)", got, err, ruleNames(h))
	}
	for _, want := range []string{"alice asks", "lead approves", "alice approved", "alice wrote"} {
		if !slicesContains(ruleNames(h), want) {
			t.Errorf("rule %q never answered: %v", want, ruleNames(h))
		}
	}
}

// A teammate that does not answer a shutdown request — its model is mid-answer — is aborted
// once the timeout passes: its loop ends, the task it held goes back to the board, and its
// record says it stopped.
func TestTeamShutdownAbortsUnansweringTeammate(t *testing.T) {
	alice := func(m scripted.Match) scripted.Match { m.System = mateIs("alice").System; return m }
	hold := make(chan struct{})
	defer close(hold)
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "alice starts", When: alice(scripted.Match{UserText: "work the board"}), Reply: []scripted.Block{scripted.Text("ready")}},
		{Name: "alice stuck", When: alice(scripted.Match{UserText: `<task-assignment id="1"`}),
			Reply: []scripted.Block{scripted.Text("working")}, Fault: &scripted.Fault{Hold: hold}},
		{Name: "lead starts", When: leadTurn(scripted.Match{UserText: "start"}), Reply: []scripted.Block{
			scripted.ToolUse("TaskCreate", map[string]any{"subject": "the task"}),
			scripted.ToolUse("Agent", map[string]any{"description": "worker", "prompt": "work the board", "name": "alice"})}},
		{Name: "lead waits", When: leadTurn(scripted.Match{ToolResult: "Agent"}), Reply: []scripted.Block{scripted.Text("started")}},
	}}
	// Nothing else must happen within the timeout: alice stays stuck however long it is.
	const timeout = 300 * time.Millisecond //keel:duration meant to pass: alice never answers
	h := newHarness(t, sc, Options{Team: TeamOptions{Enabled: true, Lease: time.Minute, ShutdownTimeout: timeout}})
	h.send(t, "start")
	tm := h.sess.Team().Current()
	waittest.Until(t, "alice to be mid-task", func() bool { return slicesContains(ruleNames(h), "alice stuck") })
	ctx := waittest.Context(t) // after the wait, which had its own time limit
	if tk, err := tm.Backend().Board().Get(ctx, "1"); err != nil || tk.Status != coord.StatusInProgress || tk.Owner != "alice" {
		t.Fatalf("task 1 before the shutdown: %+v, %v; want in progress, held by alice", tk, err)
	}
	err := tm.Shutdown(ctx, "the test is over")
	if err == nil || !strings.Contains(err.Error(), "[alice] did not stop within 300ms and were aborted") {
		t.Fatalf("Shutdown = %v; want an error naming alice as aborted", err)
	}
	tk, err := tm.Backend().Board().Get(ctx, "1")
	if err != nil || tk.Status != coord.StatusPending || tk.Owner != "" || !tk.LeaseUntil.IsZero() {
		t.Errorf("task 1 after the abort: %+v, %v; want pending, unowned, no lease", tk, err)
	}
	members, _ := tm.Members(ctx)
	for _, m := range members {
		if m.Name == "alice" && (m.State != team.StateStopped || m.Task != "") {
			t.Errorf("alice after the abort: %s holding %q; want stopped, holding nothing", m.State, m.Task)
		}
	}
	// She was asked first: the request is in her inbox, unread.
	msgs, _ := tm.Backend().Mailbox().Fetch(ctx, "alice", 0)
	if len(msgs) != 1 || msgs[0].Type != team.TypeShutdownRequest {
		t.Errorf("alice's inbox: %+v; want the unanswered shutdown request", msgs)
	}
}
