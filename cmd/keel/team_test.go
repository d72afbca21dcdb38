package main

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/keel-dev/keel/internal/provider/anthropic"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/fscoord"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/team"
	"github.com/keel-dev/keel/internal/waittest"
)

// These tests run keel as real processes: a headless lead and teammates started with
// --teammate-mode process, all talking to one scripted model on loopback.

const teamSession = "5eed0000-0000-4000-8000-000000000001"

func mate(name string, m scripted.Match) scripted.Match {
	m.System = "Your name in the team is " + name + "."
	return m
}

func lead(m scripted.Match) scripted.Match {
	m.HasTool = "Agent"
	return m
}

// teamKillScenario: the lead puts two tasks on the board, gives task 1 to alice, spawns alice
// and bob and sends alice a note. Alice's work on task 1 never finishes (its reply stalls)
// until she is killed; bob does task 2, then — once alice's claim lapsed — task 1, and
// reports; the lead wraps up.
func teamKillScenario() *scripted.Scenario {
	done := func(who, id string) scripted.Rule {
		return scripted.Rule{Name: who + " does " + id, When: mate(who, scripted.Match{UserText: `<task-assignment id="` + id + `"`}),
			Reply: []scripted.Block{scripted.ToolUse("TaskUpdate", map[string]any{"taskId": id, "status": "completed"})}}
	}
	return &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "alice stalls on 1", When: mate("alice", scripted.Match{UserText: `<task-assignment id="1"`}),
			Reply: []scripted.Block{scripted.Text("working on it")}, Fault: &scripted.Fault{Delay: 10 * time.Minute}},
		done("bob", "2"), done("bob", "1"),
		{Name: "bob after 2", When: mate("bob", scripted.Match{ToolResult: "TaskUpdate", Contains: "Updated task #2"}), Reply: []scripted.Block{scripted.Text("2 is done")}},
		{Name: "bob after 1", When: mate("bob", scripted.Match{ToolResult: "TaskUpdate", Contains: "Updated task #1"}),
			Reply: []scripted.Block{scripted.ToolUse("SendMessage", map[string]any{"to": "team-lead", "message": "finished task 1 for alice", "summary": "task 1 done"})}},
		{Name: "bob reported", When: mate("bob", scripted.Match{ToolResult: "SendMessage"}), Reply: []scripted.Block{scripted.Text("reported")}},
		{Name: "mate starts", When: scripted.Match{System: "Your name in the team is", UserText: "take tasks from the board"}, Reply: []scripted.Block{scripted.Text("ready")}},

		{Name: "lead wraps up", When: lead(scripted.Match{UserText: `teammate_id="bob"`}), Reply: []scripted.Block{scripted.Text("all tasks done")}},
		{Name: "lead plans", When: lead(scripted.Match{UserText: "run the team"}), Reply: []scripted.Block{
			scripted.ToolUse("TaskCreate", map[string]any{"subject": "slow task"}),
			scripted.ToolUse("TaskCreate", map[string]any{"subject": "quick task"})}},
		{Name: "lead assigns", When: lead(scripted.Match{ToolResult: "TaskCreate"}), Reply: []scripted.Block{
			scripted.ToolUse("TaskUpdate", map[string]any{"taskId": "1", "owner": "alice"})}},
		{Name: "lead spawns", When: lead(scripted.Match{ToolResult: "TaskUpdate"}), Reply: []scripted.Block{
			scripted.ToolUse("Agent", map[string]any{"description": "alice", "prompt": "take tasks from the board", "name": "alice"}),
			scripted.ToolUse("Agent", map[string]any{"description": "bob", "prompt": "take tasks from the board", "name": "bob"})}},
		{Name: "lead notes", When: lead(scripted.Match{ToolResult: "Agent"}), Reply: []scripted.Block{
			scripted.ToolUse("SendMessage", map[string]any{"to": "alice", "message": "task 1 is yours"})}},
		{Name: "lead waits", When: lead(scripted.Match{ToolResult: "SendMessage"}), Reply: []scripted.Block{scripted.Text("the team is working")}},
	}}
}

type teamRun struct {
	home, cwd, dir string
	env            []string
}

func newTeamRun(t *testing.T, sc *scripted.Scenario) (*teamRun, *scripted.Server) {
	t.Helper()
	srv, err := scripted.Start(t.Context(), "", sc, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	r := &teamRun{home: t.TempDir(), cwd: t.TempDir()}
	r.dir = filepath.Join(r.home, "teams", "team-"+strings.ReplaceAll(teamSession, "-", "")[:8])
	r.env = append(os.Environ(), "KEEL_HOME="+r.home, "HOME="+t.TempDir(), "ANTHROPIC_BASE_URL="+srv.URL(), "ANTHROPIC_API_KEY=test-key",
		"CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1", "KEEL_TEAM_LEASE="+waittest.Scale(2*time.Second).String())
	return r, srv
}

func (r *teamRun) keel(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "keel", args...)
	cmd.Env, cmd.Dir = r.env, r.cwd
	return cmd
}

func (r *teamRun) record(t *testing.T, name string) team.Record {
	var rec struct {
		Value team.Record `json:"value"`
	}
	b, err := os.ReadFile(filepath.Join(r.dir, "records", "members%"+name+".json"))
	if err == nil {
		err = json.Unmarshal(b, &rec)
	}
	if err != nil {
		return team.Record{}
	}
	return rec.Value
}

func TestTeamProcessKilledMidTask(t *testing.T) {
	r, srv := newTeamRun(t, teamKillScenario())
	var out, errOut bytes.Buffer
	// The lead lives as long as the test; each step below has its own time limit (the whole
	// run takes longer than one on a loaded machine).
	cmd := r.keel(t.Context(), "-p", "run the team", "--session-id", teamSession, "--teammate-mode", "process", "--output-format", "stream-json", "--verbose")
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		for _, name := range []string{"alice", "bob"} {
			if pid := r.record(t, name).PID; pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})

	// Alice holds task 1 and her model request for it is in flight: kill her mid-task.
	waittest.Until(t, "alice to be working on task 1", func() bool {
		for _, req := range srv.Requests() {
			if req.Rule == "alice stalls on 1" {
				return true
			}
		}
		return false
	})
	alice := r.record(t, "alice")
	if alice.Runner != team.RunnerProcess || alice.PID == 0 || alice.PID == cmd.Process.Pid {
		t.Fatalf("alice's record: %+v; want her own process", alice)
	}
	if err := syscall.Kill(alice.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}

	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("lead: %v\nstderr:\n%s", err, errOut.String())
		}
	case <-waittest.Context(t).Done():
		t.Fatalf("the lead did not finish\nstdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), `"result":"all tasks done"`) {
		t.Errorf("the lead's result is not the wrap-up:\n%s", out.String())
	}

	be, err := fscoord.Open(r.dir, fscoord.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	ctx := waittest.Context(t)
	tasks, err := be.Board().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range tasks {
		if tk.Status != coord.StatusCompleted || tk.Owner != "bob" {
			t.Errorf("task %s: %s by %q; want completed by bob (task 1 re-claimed after alice's lease)", tk.ID, tk.Status, tk.Owner)
		}
	}
	// No message lost or duplicated: the lead read bob's report once; the note to alice is
	// either read or still waiting for her, exactly once.
	if n := leadSaw(t, srv, `finished task 1 for alice`); n != 1 {
		t.Errorf("bob's report reached the lead %d times, want once", n)
	}
	mb := be.Mailbox()
	unread, _ := mb.Fetch(ctx, "alice", 0)
	read, _ := mb.(coord.MailLog).Delivered(ctx, "alice", 0)
	notes := 0
	for _, m := range append(unread, read...) {
		if m.Text == "task 1 is yours" {
			notes++
		}
	}
	if notes != 1 {
		t.Errorf("the lead's note to alice is there %d times (unread %d, read %d), want exactly once", notes, len(unread), len(read))
	}
	if got := r.record(t, "bob").State; got != team.StateStopped {
		t.Errorf("bob is %s after the run, want stopped (shut down by the lead)", got)
	}
}

// askScenario: the lead spawns alice, whose shell command needs approval; the headless lead
// has nobody to ask, so its model gets the question by mail and approves.
func askScenario() *scripted.Scenario {
	return &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "alice touches", When: mate("alice", scripted.Match{UserText: "make the file"}),
			Reply: []scripted.Block{scripted.ToolUse("Bash", map[string]any{"command": "touch made-by-alice.txt"})}},
		{Name: "alice reports", When: mate("alice", scripted.Match{ToolResult: "Bash"}),
			Reply: []scripted.Block{scripted.ToolUse("SendMessage", map[string]any{"to": "team-lead", "message": "the file is made"})}},
		{Name: "alice done", When: mate("alice", scripted.Match{ToolResult: "SendMessage"}), Reply: []scripted.Block{scripted.Text("done")}},
		{Name: "lead spawns", When: lead(scripted.Match{UserText: "delegate"}), Reply: []scripted.Block{
			scripted.ToolUse("Agent", map[string]any{"description": "maker", "prompt": "make the file", "name": "alice"})}},
		{Name: "lead waits", When: lead(scripted.Match{ToolResult: "Agent"}), Reply: []scripted.Block{scripted.Text("delegated")}},
		{Name: "lead approves", When: lead(scripted.Match{UserText: `type="permission_request"`}), Reply: []scripted.Block{
			scripted.ToolUse("SendMessage", map[string]any{"to": "alice", "message": map[string]any{"type": "permission_response", "approve": true}})}},
		// Her report may arrive with the answer's result: the wrap-up rule comes first.
		{Name: "lead wraps up", When: lead(scripted.Match{UserText: "the file is made"}), Reply: []scripted.Block{scripted.Text("alice made the file")}},
		{Name: "lead approved", When: lead(scripted.Match{ToolResult: "SendMessage"}), Reply: []scripted.Block{scripted.Text("approved")}},
	}}
}

// A teammate in its own process asks for a permission: the request crosses processes as a
// pending record, the lead's model answers, the resolution reaches the teammate.
func TestTeamProcessPermissionAcrossProcesses(t *testing.T) {
	for _, mode := range []string{"process", "tmux"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "tmux" {
				if _, err := exec.LookPath("tmux"); err != nil {
					t.Skip("SKIPPED LOUDLY: tmux is not installed (scripts/test.sh installs it); the tmux runner is untested here")
				}
			}
			r, srv := newTeamRun(t, askScenario())
			if mode == "tmux" {
				// A tmux server of this test's own, away from any the user runs.
				r.env = append(r.env, "TMUX=", "TMUX_TMPDIR="+t.TempDir())
				t.Cleanup(func() {
					kill := exec.Command("tmux", "kill-server")
					kill.Env = r.env
					_ = kill.Run()
				})
			}
			out, err := r.keel(waittest.Context(t), "-p", "delegate", "--session-id", teamSession, "--teammate-mode", mode, "--output-format", "stream-json").CombinedOutput()
			if err != nil {
				t.Fatalf("lead: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), `"result":"alice made the file"`) {
				t.Errorf("the lead did not finish with alice's report:\n%s", out)
			}
			if _, err := os.Stat(filepath.Join(r.cwd, "made-by-alice.txt")); err != nil {
				t.Errorf("alice's approved command did not run: %v", err)
			}
			rec := r.record(t, "alice")
			if rec.Runner != mode || rec.State != team.StateStopped {
				t.Errorf("alice's record: runner %s, state %s; want %s, stopped", rec.Runner, rec.State, mode)
			}
			if mode == "tmux" && rec.Pane == "" {
				t.Error("alice ran in tmux but her record names no pane")
			}
			var approved bool
			for _, req := range srv.Requests() {
				approved = approved || req.Rule == "lead approves"
			}
			if !approved {
				t.Error("the lead's model was never asked")
			}
			entries, _ := os.ReadDir(filepath.Join(r.dir, "requests", "resolved"))
			if len(entries) != 1 {
				t.Errorf("%d resolved requests, want alice's one", len(entries))
			}
		})
	}
}

// A teammate process outlives its lead: the lead is killed while alice works; `keel
// --continue` finds alice again through the backend (the same process, not a new one), waits
// for her to finish and shuts the team down.
func TestTeamProcessSurvivesLeadAndIsRefound(t *testing.T) {
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "alice works", When: mate("alice", scripted.Match{UserText: `<task-assignment id="1"`}),
			Reply: []scripted.Block{scripted.ToolUse("TaskUpdate", map[string]any{"taskId": "1", "status": "completed"})},
			Fault: &scripted.Fault{Delay: waittest.Scale(150 * time.Millisecond)}}, // before every stream event
		{Name: "alice done", When: mate("alice", scripted.Match{ToolResult: "TaskUpdate"}), Reply: []scripted.Block{scripted.Text("done")}},
		{Name: "alice ready", When: mate("alice", scripted.Match{UserText: "take tasks"}), Reply: []scripted.Block{scripted.Text("ready")}},
		{Name: "lead plans", When: lead(scripted.Match{UserText: "start"}), Reply: []scripted.Block{
			scripted.ToolUse("TaskCreate", map[string]any{"subject": "slow work"}),
			scripted.ToolUse("Agent", map[string]any{"description": "worker", "prompt": "take tasks", "name": "alice"})}},
		{Name: "lead waits", When: lead(scripted.Match{ToolResult: "Agent"}), Reply: []scripted.Block{scripted.Text("started")}},
		{Name: "lead resumed", When: lead(scripted.Match{UserText: "how is it going"}), Reply: []scripted.Block{scripted.Text("alice is still on it")}},
	}}
	r, srv := newTeamRun(t, sc)
	// The first lead lives until the test kills it; each later step has its own time limit.
	first := r.keel(t.Context(), "-p", "start", "--session-id", teamSession, "--teammate-mode", "process")
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if pid := r.record(t, "alice").PID; pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	waittest.Until(t, "alice to be working on the task", func() bool {
		for _, req := range srv.Requests() {
			if req.Rule == "alice works" {
				return true
			}
		}
		return false
	})
	alice := r.record(t, "alice").PID
	_ = first.Process.Kill()
	_ = first.Wait()

	out, err := r.keel(waittest.Context(t), "--continue", "-p", "how is it going", "--teammate-mode", "process").CombinedOutput()
	if err != nil {
		t.Fatalf("continued lead: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "alice is still on it") {
		t.Errorf("continued lead's output:\n%s", out)
	}
	rec := r.record(t, "alice")
	if rec.PID != alice {
		t.Errorf("alice's process changed from %d to %d: she was restarted, not found again", alice, rec.PID)
	}
	if rec.State != team.StateStopped {
		t.Errorf("alice is %s after the continued run, want stopped", rec.State)
	}
	be, err := fscoord.Open(r.dir, fscoord.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	if tk, err := be.Board().Get(waittest.Context(t), "1"); err != nil || tk.Status != coord.StatusCompleted {
		t.Errorf("task 1: %+v, %v; want completed by the surviving alice", tk, err)
	}
}

// leadSaw counts the blocks of the lead's last model request that carry text: how many times
// a message reached the lead's conversation.
func leadSaw(t *testing.T, srv *scripted.Server, text string) int {
	t.Helper()
	var last []byte
	for _, r := range srv.Requests() {
		if strings.Contains(string(r.Body), `"name":"Agent"`) && !strings.Contains(string(r.Body), "Your name in the team is") {
			last = r.Body
		}
	}
	msgs, err := anthropic.DecodeMessages(last)
	if err != nil {
		t.Fatalf("the lead's last request: %v", err)
	}
	n := 0
	for _, m := range msgs {
		for _, b := range m.Content {
			if strings.Contains(b.Text, text) || strings.Contains(message.Message{Content: b.Content}.TextOf(), text) {
				n++
			}
		}
	}
	return n
}

// A process teammate is configured as its lead was: an agent type the lead's --agents
// defines is one its teammate process can be (the worker used to be started with a few flags
// rebuilt into its argv, and --agents was not among them).
func TestTeamProcessTeammateOfAnAgentsFlagType(t *testing.T) {
	ctx := waittest.Context(t)
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "reviewer reports", When: mate("alice", scripted.Match{System: "REVIEWER-INSTRUCTIONS", UserText: "review the code"}),
			Reply: []scripted.Block{scripted.ToolUse("SendMessage", map[string]any{"to": "team-lead", "message": "reviewed as a reviewer"})}},
		{Name: "reviewer done", When: mate("alice", scripted.Match{ToolResult: "SendMessage"}), Reply: []scripted.Block{scripted.Text("done")}},
		{Name: "lead spawns", When: lead(scripted.Match{UserText: "get a review"}), Reply: []scripted.Block{
			scripted.ToolUse("Agent", map[string]any{"description": "review", "prompt": "review the code", "name": "alice", "subagent_type": "reviewer"})}},
		{Name: "lead wraps up", When: lead(scripted.Match{UserText: "reviewed as a reviewer"}), Reply: []scripted.Block{scripted.Text("the review is in")}},
		{Name: "lead waits", When: lead(scripted.Match{ToolResult: "Agent"}), Reply: []scripted.Block{scripted.Text("review started")}},
	}}
	r, _ := newTeamRun(t, sc)
	agents := `{"reviewer":{"description":"reviews code","prompt":"REVIEWER-INSTRUCTIONS: review carefully."}}`
	out, err := r.keel(ctx, "-p", "get a review", "--session-id", teamSession, "--teammate-mode", "process", "--agents", agents,
		"--output-format", "stream-json").CombinedOutput()
	if err != nil {
		t.Fatalf("lead: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `"result":"the review is in"`) {
		t.Errorf("the lead did not finish with the reviewer's report:\n%s", out)
	}
	if rec := r.record(t, "alice"); rec.Runner != "process" || rec.AgentType != "reviewer" {
		t.Errorf("alice's record: runner %s, type %s; want a process of type reviewer", rec.Runner, rec.AgentType)
	}
}
