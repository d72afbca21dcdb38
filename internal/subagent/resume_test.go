package subagent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/gittest"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/transcript"
	"github.com/keel-dev/keel/internal/worktree"
)

// TestSendMessageResumesFromTranscript continues a finished subagent in a new Runner (a new
// process after keel --resume): it gets its whole history back and the follow-up.
func TestSendMessageResumesFromTranscript(t *testing.T) {
	follow := scripted.Rule{Name: "follow-up", When: scripted.Match{UserText: "FOLLOW-UP"},
		Reply: []scripted.Block{scripted.Text("follow-up answer: 43")}}
	sc := spawnScenario("general-purpose", follow)
	srv, err := scripted.Start(t.Context(), "", sc, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	session := filepath.Join(t.TempDir(), "session.jsonl")
	w := newWorldOn(t, srv, worldOptions{session: session, rules: []string{"Read"}})
	_ = os.WriteFile(filepath.Join(w.dir, "notes.txt"), []byte("x"), 0o644)
	out := w.run("start")
	id := agentIDRe.FindStringSubmatch(toolResults(out.Messages)[0])[1]

	w2 := newWorldOn(t, srv, worldOptions{session: session})
	text, err := w2.runner.Resume(t.Context(), id, "FOLLOW-UP: and plus one?")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text, "follow-up answer: 43") || !has(text, "agentId: "+id) {
		t.Errorf("resume result = %q", text)
	}
	last := srv.Requests()[len(srv.Requests())-1]
	if last.Rule != "follow-up" || !has(string(last.Body), "CHILD-TASK") || !has(string(last.Body), "Child result: 42.") {
		t.Errorf("the continued agent's request lacks its history (rule %s)", last.Rule)
	}
	path, _ := transcript.AgentPaths(session, id)
	st, err := transcript.Load(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	if msgs, _ := st.Messages(); len(msgs) != 6 {
		t.Errorf("transcript has %d messages after the follow-up, want 6", len(msgs))
	}

	// Unknown ids fail with a message the model can act on.
	if _, err := w2.runner.Resume(t.Context(), "a0000000000000000", "hi"); err == nil || !has(err.Error(), "no agent with id") {
		t.Errorf("unknown id: %v", err)
	}
}

func TestWorktreeIsolation(t *testing.T) {
	repo := gittest.New(t)
	write := scripted.Rule{Name: "iso-write", When: scripted.Match{UserText: "WRITE-TASK"},
		Reply: []scripted.Block{scripted.ToolUse("Write", map[string]any{"file_path": "made.txt", "content": "made in a worktree\n"})}}
	look := scripted.Rule{Name: "iso-look", When: scripted.Match{UserText: "LOOK-TASK"}, Reply: []scripted.Block{scripted.Text("nothing to change")}}
	wrote := scripted.Rule{Name: "iso-wrote", When: scripted.Match{ToolResult: "Write"}, Reply: []scripted.Block{scripted.Text("wrote it")}}
	spawn := scripted.Rule{Name: "spawn-two", When: scripted.Match{UserText: "start"}, Times: 1, Reply: []scripted.Block{
		scripted.ToolUse("Agent", map[string]any{"description": "w", "prompt": "WRITE-TASK", "subagent_type": "general-purpose", "isolation": "worktree"}),
		scripted.ToolUse("Agent", map[string]any{"description": "l", "prompt": "LOOK-TASK", "subagent_type": "general-purpose", "isolation": "worktree"}),
	}}
	done := scripted.Rule{Name: "done", When: scripted.Match{ToolResult: "Agent"}, Reply: []scripted.Block{scripted.Text("ok")}}
	w := newWorld(t, &scripted.Scenario{Rules: []scripted.Rule{write, look, wrote, spawn, done}}, worldOptions{dir: repo.Dir, rules: []string{"Write"},
		cfg: func(c *Config) { c.Worktrees = &worktree.Manager{Root: repo.Dir} }})
	out := w.run("start")
	res := toolResults(out.Messages)
	if len(res) != 2 {
		t.Fatalf("results = %q", res)
	}
	if !has(res[0], "worktree") || !has(res[0], "on branch keel/agent-") {
		t.Errorf("writer's result does not report its kept worktree: %q", res[0])
	}
	if has(res[1], "worktree") {
		t.Errorf("the unchanged worktree was reported: %q", res[1])
	}
	if _, err := os.Stat(filepath.Join(repo.Dir, "made.txt")); err == nil {
		t.Error("the isolated write landed in the main tree")
	}
	entries, _ := os.ReadDir(filepath.Join(repo.Dir, worktree.Dir))
	if len(entries) != 1 {
		t.Fatalf("%d worktrees left, want the changed one only", len(entries))
	}
	if got := readFile(t, filepath.Join(repo.Dir, worktree.Dir, entries[0].Name(), "made.txt")); got != "made in a worktree\n" {
		t.Errorf("made.txt = %q", got)
	}
}

// TestInterruptedAgentReturnsItsID: a subagent cut off by the user still reports its id, so it
// can be continued.
func TestInterruptedAgentReturnsItsID(t *testing.T) {
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "child", When: scripted.Match{UserText: "CHILD"}, Reply: []scripted.Block{scripted.Text("working on it"), scripted.ToolUse("mcp__test__wait", map[string]any{})}},
		{Name: "spawn", When: scripted.Match{UserText: "start"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Agent",
			map[string]any{"description": "c", "prompt": "CHILD", "subagent_type": "Explore"})}},
	}}
	entered := make(chan struct{}, 1)
	w := newWorld(t, sc, worldOptions{tools: []tool.Tool{blockTool(entered, make(chan struct{}))}})
	ctx, cancel := context.WithCancelCause(t.Context())
	go func() {
		// Interrupt once the child's blocking call has started.
		select {
		case <-entered:
			cancel(loop.ErrInterrupted)
		case <-ctx.Done():
		}
	}()
	out, err := w.main.Run(ctx, []message.Message{message.User(message.Text("start"))})
	if !errors.Is(err, loop.ErrInterrupted) {
		t.Fatalf("run error = %v, want interrupted", err)
	}
	res := toolResults(out.Messages)
	if len(res) != 1 || !has(res[0], "The agent was interrupted") || !agentIDRe.MatchString(res[0]) {
		t.Errorf("interrupted result = %q; want the agent id even for a one-shot agent", res)
	}
}
