package subagent

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/keel-dev/keel/internal/background"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/tool"
)

func backgroundScenario() *scripted.Scenario {
	return &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "drained", When: scripted.Match{Contains: "<task-notification>"}, Reply: []scripted.Block{scripted.Text("got the background report")}},
		{Name: "bg-child", When: scripted.Match{UserText: "BG-TASK"}, Reply: []scripted.Block{scripted.Text("bg findings: 7 files")}},
		{Name: "spawn", When: scripted.Match{UserText: "start"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Agent",
			map[string]any{"description": "survey", "prompt": "BG-TASK: count files", "subagent_type": "general-purpose", "run_in_background": true})}},
		{Name: "launched", When: scripted.Match{ToolResult: "Agent"}, Reply: []scripted.Block{scripted.Text("launched; waiting")}},
	}}
}

func countMarker(msgs []message.Message, marker string) int {
	n := 0
	for _, m := range msgs {
		for _, b := range m.Content {
			if b.Type == message.TypeText {
				n += strings.Count(b.Text, marker)
			}
		}
	}
	return n
}

func TestBackgroundAgentNotifiesOnce(t *testing.T) {
	w := newWorld(t, backgroundScenario(), worldOptions{})
	out := w.run("start")
	res := toolResults(out.Messages)
	if len(res) != 1 || !has(res[0], "Async agent launched successfully.") || has(res[0], "bg findings") {
		t.Fatalf("launch result = %q; want a receipt without findings", res)
	}
	id := agentIDRe.FindStringSubmatch(res[0])[1]
	if !has(res[0], "task_id: "+id) {
		t.Errorf("receipt lacks the task id: %q", res[0])
	}
	// keel -p waits for outstanding agents, then gives the parent a turn.
	if n, err := w.tasks.WaitIdle(t.Context(), background.MainOwner); err != nil || n != 1 {
		t.Fatalf("WaitIdle = %d, %v", n, err)
	}
	out2 := w.run("continue", out.Messages...)
	if out2.Text != "got the background report" {
		t.Fatalf("parent text = %q", out2.Text)
	}
	marker := "<task-id>" + id + "</task-id>"
	if n := countMarker(out2.Messages, marker); n != 1 {
		t.Errorf("notification in history %d times, want 1", n)
	}
	if !has(strings.Join(texts(out2.Messages), "\n"), "<result>bg findings: 7 files</result>") {
		t.Error("notification lacks the result")
	}
	// Acked after the turn: another turn gets nothing.
	q, _ := w.tasks.Queue(background.MainOwner)
	if q.Len() != 0 {
		t.Errorf("queue still holds %d", q.Len())
	}
	if info, _ := w.tasks.Get(id); info.Status != background.StatusCompleted {
		t.Errorf("task status = %s", info.Status)
	}
}

func texts(msgs []message.Message) []string {
	var out []string
	for _, m := range msgs {
		for _, b := range m.Content {
			if b.Type == message.TypeText {
				out = append(out, b.Text)
			}
		}
	}
	return out
}

// TestBackgroundKillRedeliversOnce kills a real process after its background agent finished
// but before the parent drained the notification; a new process resuming the session gets the
// notification exactly once.
func TestBackgroundKillRedeliversOnce(t *testing.T) {
	if dir := os.Getenv("KEEL_SUBAGENT_KILL_DIR"); dir != "" {
		w := newWorld(t, backgroundScenario(), worldOptions{session: filepath.Join(dir, "session.jsonl")})
		w.run("start")
		_, _ = w.tasks.WaitIdle(context.Background(), background.MainOwner)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	dir := t.TempDir()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestBackgroundKillRedeliversOnce$")
	cmd.Env = append(os.Environ(), "KEEL_SUBAGENT_KILL_DIR="+dir)
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child process: %v, want killed", err)
	}
	resume := func() *world {
		return newWorld(t, backgroundScenario(), worldOptions{session: filepath.Join(dir, "session.jsonl")})
	}
	w := resume()
	out := w.run("continue")
	if n := countMarker(out.Messages, "<task-notification>"); n != 1 {
		t.Fatalf("after the kill: %d notifications delivered, want 1", n)
	}
	if out.Text != "got the background report" {
		t.Errorf("parent text = %q", out.Text)
	}
	w2 := resume()
	out2 := w2.run("continue again")
	if n := countMarker(out2.Messages, "<task-notification>"); n != 0 {
		t.Errorf("after ack and another restart: %d notifications, want 0", n)
	}
}

// TestBackgroundTaskOfSubagentReportsToParent: a subagent starts a background agent and ends
// its turn; the grandchild's report reaches the subagent's parent.
func TestBackgroundTaskOfSubagentReportsToParent(t *testing.T) {
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "drained", When: scripted.Match{Contains: "<task-notification>"}, Reply: []scripted.Block{scripted.Text("parent got it")}},
		{Name: "grandchild", When: scripted.Match{UserText: "BG-TASK"}, Reply: []scripted.Block{scripted.ToolUse("mcp__test__wait", map[string]any{})}},
		{Name: "grandchild-done", When: scripted.Match{ToolResult: "mcp__test__wait"}, Reply: []scripted.Block{scripted.Text("late findings")}},
		{Name: "child", When: scripted.Match{UserText: "CHILD"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Agent",
			map[string]any{"description": "bg", "prompt": "BG-TASK", "subagent_type": "general-purpose", "run_in_background": true})}},
		{Name: "child-ends", When: scripted.Match{ToolResult: "Agent", LacksTool: "TaskOutput"}, Reply: []scripted.Block{scripted.Text("child ended")}},
		{Name: "spawn", When: scripted.Match{UserText: "start"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Agent",
			map[string]any{"description": "c", "prompt": "CHILD", "subagent_type": "general-purpose"})}},
		{Name: "parent-after", When: scripted.Match{ToolResult: "Agent"}, Reply: []scripted.Block{scripted.Text("parent waits")}},
	}}
	release := make(chan struct{})
	w := newWorld(t, sc, worldOptions{maxDepth: 2, tools: []tool.Tool{gateTool(release)}})
	out := w.run("start")
	// The child's turn is over; only now does its background agent finish.
	close(release)
	if n, err := w.tasks.WaitIdle(t.Context(), background.MainOwner); err != nil || n != 1 {
		for _, r := range w.srv.Requests() {
			t.Log(r.N, r.Rule)
		}
		t.Log(toolResults(out.Messages))
		t.Fatalf("WaitIdle(main) = %d, %v", n, err)
	}
	out2 := w.run("continue", out.Messages...)
	if out2.Text != "parent got it" || !has(strings.Join(texts(out2.Messages), "\n"), "late findings") {
		t.Errorf("parent = %q", out2.Text)
	}
}

// TestMessageToRunningAgentAndStop: SendMessage to a running background agent reaches it at
// its next request; TaskStop kills another, whose notification says killed.
func TestMessageToRunningAgentAndStop(t *testing.T) {
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "got-message", When: scripted.Match{Contains: "PLEASE ALSO"}, Reply: []scripted.Block{scripted.Text("did both")}},
		{Name: "bg-wait", When: scripted.Match{UserText: "BG-"}, Reply: []scripted.Block{scripted.ToolUse("mcp__test__wait", map[string]any{})}},
		{Name: "bg-done", When: scripted.Match{ToolResult: "mcp__test__wait"}, Reply: []scripted.Block{scripted.Text("did one")}},
		{Name: "spawn", When: scripted.Match{UserText: "start"}, Times: 1, Reply: []scripted.Block{
			scripted.ToolUse("Agent", map[string]any{"description": "a", "prompt": "BG-A", "subagent_type": "general-purpose", "run_in_background": true}),
			scripted.ToolUse("Agent", map[string]any{"description": "b", "prompt": "BG-B", "subagent_type": "general-purpose", "run_in_background": true}),
		}},
		{Name: "launched", When: scripted.Match{ToolResult: "Agent"}, Reply: []scripted.Block{scripted.Text("launched")}},
	}}
	release := make(chan struct{})
	w := newWorld(t, sc, worldOptions{tools: []tool.Tool{gateTool(release)}})
	out := w.run("start")
	res := toolResults(out.Messages)
	a, b := agentIDRe.FindStringSubmatch(res[0])[1], agentIDRe.FindStringSubmatch(res[1])[1]

	if got := w.runner.Send(t.Context(), "", "", a, "PLEASE ALSO check the docs").ResultText(); !has(got, "delivered to running agent "+a) {
		t.Fatalf("Send to a running agent = %q", got)
	}
	if info, err := w.tasks.Stop(t.Context(), b); err != nil || info.Status != background.StatusKilled {
		t.Fatalf("Stop = %+v, %v", info, err)
	}
	close(release)
	info, err := w.tasks.Wait(t.Context(), a)
	if err != nil || info.Result != "did both" {
		t.Errorf("agent a = %+v, %v; want it to have read the message", info, err)
	}
	q, _ := w.tasks.Queue(background.MainOwner)
	all := strings.Join(func() []string {
		var s []string
		for _, blk := range q.Observe(t.Context()) {
			s = append(s, blk.Text)
		}
		return s
	}(), "\n")
	if !has(all, "<task-id>"+b+"</task-id>") || !has(all, "<status>killed</status>") || !has(all, "<status>completed</status>") {
		t.Errorf("notifications = %s", all)
	}
}
