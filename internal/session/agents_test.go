package session

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/tool"
)

func agentScenario() *scripted.Scenario {
	return &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "drained", When: scripted.Match{Contains: "<task-notification>"}, Reply: []scripted.Block{scripted.Text("report received")}},
		{Name: "bg-child", When: scripted.Match{UserText: "BG-TASK"}, Reply: []scripted.Block{scripted.ToolUse("mcp__test__wait", map[string]any{})}},
		{Name: "bg-child-done", When: scripted.Match{ToolResult: "mcp__test__wait"}, Reply: []scripted.Block{scripted.Text("bg findings: 7 files")}},
		{Name: "fg-child", When: scripted.Match{UserText: "FG-TASK"}, Reply: []scripted.Block{scripted.Text("fg findings: 42")}},
		{Name: "follow-up", When: scripted.Match{UserText: "FOLLOW-UP"}, Reply: []scripted.Block{scripted.Text("follow-up: 43")}},
		{Name: "spawn-bg", When: scripted.Match{UserText: "survey"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Agent",
			map[string]any{"description": "survey", "prompt": "BG-TASK: count", "subagent_type": "general-purpose", "run_in_background": true})}},
		{Name: "spawn-fg", When: scripted.Match{UserText: "ask"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Agent",
			map[string]any{"description": "ask", "prompt": "FG-TASK: answer", "subagent_type": "general-purpose"})}},
		{Name: "after-agent", When: scripted.Match{ToolResult: "Agent"}, Reply: []scripted.Block{scripted.Text("parent turn done")}},
	}}
}

func countIn(msgs []message.Message, sub string) int {
	n := 0
	for _, m := range msgs {
		for _, b := range m.Content {
			n += strings.Count(b.Text, sub)
		}
	}
	return n
}

// TestBackgroundNotificationSurvivesKill kills the keel process after its background agent
// finished (the notification is persisted) but before the main thread drained it; the resumed
// session gets the notification exactly once, and a later resume gets nothing.
func TestBackgroundNotificationSurvivesKill(t *testing.T) {
	if env := os.Getenv("KEEL_SESSION_KILL"); env != "" {
		home, cwd, _ := strings.Cut(env, "|")
		release := make(chan struct{})
		h := newHarness(t, agentScenario(), Options{Home: home, Cwd: cwd, SessionID: "0b6c5e7e-5d0a-4f43-9a51-6b3c4a0e9d11",
			Tools: []tool.Tool{waitTool(release)}})
		h.send(t, "survey")
		// Only now, with the parent's turn over, does the background agent finish.
		close(release)
		if n, err := h.sess.agents.WaitBackground(context.Background()); err != nil || n != 1 {
			t.Fatalf("WaitBackground = %d, %v", n, err)
		}
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	home, cwd := t.TempDir(), t.TempDir()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestBackgroundNotificationSurvivesKill$")
	cmd.Env = append(os.Environ(), "KEEL_SESSION_KILL="+home+"|"+cwd)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child process: %v, want killed\n%s", err, out)
	}

	open := make(chan struct{})
	close(open)
	h := newHarness(t, agentScenario(), Options{Home: home, Cwd: cwd, Resume: "0b6c5e7e-5d0a-4f43-9a51-6b3c4a0e9d11", Tools: []tool.Tool{waitTool(open)}})
	if n := h.sess.Agents().Pending(); n != 1 {
		t.Fatalf("pending after the kill = %d, want 1", n)
	}
	var res event.Result
	for e, err := range h.sess.agents.SendPending(t.Context()) {
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := e.(event.Result); ok {
			res = r
		}
	}
	if res.Text != "report received" {
		t.Errorf("result = %q", res.Text)
	}
	if n := countIn(h.sess.History(), "<task-notification>"); n != 1 {
		t.Errorf("notification in history %d times, want 1", n)
	}
	h.sess.Close()

	again := newHarness(t, agentScenario(), Options{Home: home, Cwd: cwd, Resume: "0b6c5e7e-5d0a-4f43-9a51-6b3c4a0e9d11", Tools: []tool.Tool{waitTool(open)}})
	if n := again.sess.Agents().Pending(); n != 0 {
		t.Errorf("pending after drain and another resume = %d, want 0", n)
	}
	if n := countIn(again.sess.History(), "<task-notification>"); n != 1 {
		t.Errorf("notification in resumed history %d times, want 1", n)
	}
}

// waitTool blocks until release is closed; it holds a background agent until the test lets go.
func waitTool(release <-chan struct{}) tool.Tool {
	return tool.New(tool.Spec[struct{}]{Name: "mcp__test__wait", Description: "waits", Schema: []byte(`{"type":"object"}`),
		IsReadOnly: tool.Always[struct{}],
		Run: func(ctx context.Context, env *tool.Env, in struct{}) tool.Result {
			select {
			case <-release:
				return tool.Text("released")
			case <-ctx.Done():
				return tool.Errorf("cancelled")
			}
		}})
}

var agentIDRe = regexp.MustCompile(`agentId: (a[0-9a-f]{16})`)

// TestResumeAgentAfterSessionResume continues a subagent in a new process after keel --resume
// (what `keel agents resume` does), and rolls its usage into the parent's result.
func TestResumeAgentAfterSessionResume(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	first := newHarness(t, agentScenario(), Options{Home: home, Cwd: cwd})
	events := first.send(t, "ask")
	res := result(t, events)
	var id string
	for _, m := range first.sess.History() {
		for _, b := range m.Content {
			for _, c := range b.Content {
				if m := agentIDRe.FindStringSubmatch(c.Text); m != nil {
					id = m[1]
				}
			}
		}
	}
	if id == "" {
		t.Fatal("no agent id in the Agent result")
	}
	// The child's usage is in the parent's result: more than the parent's own two requests.
	var own int64
	for _, e := range events {
		if a, ok := e.(event.AssistantMessage); ok && a.AgentID == "" {
			own += a.Usage.TotalInput()
		}
	}
	if res.Usage.TotalInput() <= own {
		t.Errorf("result usage %d does not include the subagent's (parent alone %d)", res.Usage.TotalInput(), own)
	}
	sid := first.sess.ID()
	first.sess.Close()

	second := newHarness(t, agentScenario(), Options{Home: home, Cwd: cwd, Resume: sid})
	text, err := second.sess.Agents().Resume(t.Context(), id, "FOLLOW-UP: once more")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text, "follow-up: 43") || !strings.Contains(text, "agentId: "+id) {
		t.Errorf("resumed agent said %q", text)
	}
	reqs := second.srv.Requests()
	if last := reqs[len(reqs)-1]; !strings.Contains(string(last.Body), "fg findings: 42") {
		t.Error("the continued agent's request lacks its earlier history")
	}
}
