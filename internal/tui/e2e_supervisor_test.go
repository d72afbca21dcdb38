package tui_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/keel-dev/keel/internal/daemon"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/waittest"
)

// supervisorRules: "start the survey" launches a background agent whose Bash command holds
// until the test creates the file release; its report is drained at the main agent's next
// request.
func supervisorRules(dir string) []scripted.Rule {
	hold := fmt.Sprintf("touch %[1]s/started; while ! test -e %[1]s/release; do sleep 0.02; done", dir)
	return []scripted.Rule{
		{Name: "drained", When: scripted.Match{Contains: "<task-notification>"}, Reply: []scripted.Block{scripted.Text("Report received.")}},
		{Name: "bg-after", When: scripted.Match{ToolResult: "Bash"}, Reply: []scripted.Block{scripted.Text("bg findings: 7 files")}},
		{Name: "bg-child", When: scripted.Match{UserText: "BG-TASK"}, Reply: []scripted.Block{
			scripted.ToolUse("Bash", map[string]any{"command": hold, "description": "survey"})}},
		{Name: "spawn", When: scripted.Match{UserText: "start the survey"}, Reply: []scripted.Block{
			scripted.ToolUse("Agent", map[string]any{"description": "survey", "prompt": "BG-TASK: count the files",
				"subagent_type": "general-purpose", "run_in_background": true})}},
		{Name: "launched", When: scripted.Match{ToolResult: "Agent"}, Reply: []scripted.Block{scripted.Text("Launched; I will report when it finishes.")}},
		{Name: "again", When: scripted.Match{UserText: "anything else"}, Reply: []scripted.Block{scripted.Text("Nothing else.")}},
	}
}

// A background agent launched from the terminal UI runs in the supervisor: it outlives the
// UI's SIGKILL, the UI opened again with --continue mirrors it while it still runs, and when it
// finishes the idle UI gives the agent a turn for its report — which reaches the session
// exactly once.
func TestE2EBackgroundAgentInSupervisor(t *testing.T) {
	dir := t.TempDir()
	srv := startScripted(t, supervisorRules(dir)...)
	home := dir + "-home"
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	// The supervisor's agents take the model's address from settings, never from the shell.
	settingsJSON := fmt.Sprintf(`{"env": {"ANTHROPIC_BASE_URL": %q, "ANTHROPIC_API_KEY": "test", "ANTHROPIC_MODEL": "claude-scripted"}}`, srv.URL())
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(settingsJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	client := daemon.NewClient(daemon.ClientConfig{Home: home})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waittest.Timeout())
		defer cancel()
		if _, err := client.Shutdown(ctx); err != nil {
			t.Errorf("stop the supervisor: %v", err)
			if st, err := client.Status(context.Background()); err == nil && st.Info != nil {
				_ = syscall.Kill(st.Info.PID, syscall.SIGKILL) // never leave one behind
			}
		}
		_ = client.Close()
		if t.Failed() {
			logs, _ := filepath.Glob(filepath.Join(home, "supervisor", "*", "*.log"))
			for _, l := range append(logs, filepath.Join(home, "supervisor", "supervisor.log")) {
				b, _ := os.ReadFile(l)
				t.Logf("%s:\n%s", l, b)
			}
		}
	})

	tm := startKeel(t, srv, dir, 100, 30, "--allowedTools", "Bash")
	tm.waitFor("shift+tab")
	tm.typeText("start the survey")
	tm.keys("Enter")
	tm.waitFor("Launched; I will report when it finishes.")
	waittest.Until(t, "the agent to start its work in the supervisor", func() bool {
		_, err := os.Stat(filepath.Join(dir, "started"))
		return err == nil
	})
	pid, err := strconv.Atoi(strings.TrimSpace(tm.tmux("display-message", "-p", "-t", tm.target, "#{pane_pid}")))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waittest.Until(t, "the killed UI to be gone", func() bool { return syscall.Kill(pid, 0) != nil })

	st, err := client.Status(waittest.Context(t))
	if err != nil || len(st.Jobs) != 1 || st.Jobs[0].State != daemon.StateRunning {
		t.Fatalf("after the UI's kill the supervisor has %+v (%v); want the agent running", st.Jobs, err)
	}
	agent := st.Jobs[0].Agent.ID

	tm2 := startKeel(t, srv, dir, 100, 30, "--continue", "--allowedTools", "Bash")
	tm2.waitFor("shift+tab")
	if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tm2.waitFor("Report received.")
	tm2.typeText("anything else")
	tm2.keys("Enter")
	tm2.waitFor("Nothing else.")
	if s := tm2.screen(); strings.Count(s, "Report received.") != 1 {
		t.Errorf("the report was answered %d times on screen:\n%s", strings.Count(s, "Report received."), s)
	}
	drained := 0
	for _, r := range srv.Requests() {
		if r.Rule == "drained" {
			drained++
		}
	}
	if drained != 1 {
		t.Errorf("the model was given the report %d times, want once", drained)
	}
	paths, _ := filepath.Glob(filepath.Join(home, "projects", "*", "*.jsonl"))
	if len(paths) != 1 {
		t.Fatalf("transcripts: %v; want the one session", paths)
	}
	b, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	n := strings.Count(string(b), `\u003ctask-id\u003e`+agent+`\u003c/task-id\u003e`) + strings.Count(string(b), "<task-id>"+agent+"</task-id>")
	if n != 1 {
		t.Errorf("the transcript holds the agent's report %d times, want once", n)
	}
}
