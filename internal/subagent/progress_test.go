package subagent

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/keel-dev/keel/internal/background"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/waittest"
)

var tokensRe = regexp.MustCompile(`subagent_tokens: (\d+)`)

// TestTaskProgress: each reply of a subagent that calls tools is a TaskProgress event for
// its task, with the calls and tokens so far and the last tool's name; a reply without
// calls is not.
func TestTaskProgress(t *testing.T) {
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "spawn", When: scripted.Match{UserText: "start"}, Times: 1,
			Reply: []scripted.Block{scripted.ToolUse("Agent", map[string]any{"description": "look around", "prompt": "CHILD-TASK: look", "subagent_type": "general-purpose"})}},
		{Name: "child-first", When: scripted.Match{UserText: "CHILD-TASK"}, Times: 1,
			Reply: []scripted.Block{scripted.ToolUse("Glob", map[string]any{"pattern": "*.txt"}), scripted.ToolUse("Read", map[string]any{"file_path": "notes.txt"})}},
		{Name: "child-second", When: scripted.Match{ToolResult: "Read"}, Times: 1,
			Reply: []scripted.Block{scripted.ToolUse("Grep", map[string]any{"pattern": "answer"})}},
		{Name: "child-done", When: scripted.Match{ToolResult: "Grep"}, Reply: []scripted.Block{scripted.Text("Child result: 42.")}},
		{Name: "parent-done", When: scripted.Match{ToolResult: "Agent"}, Reply: []scripted.Block{scripted.Text("Parent done.")}},
	}}
	w := newWorld(t, sc, worldOptions{rules: []string{"Read", "Glob", "Grep"}})
	if err := os.WriteFile(filepath.Join(w.dir, "notes.txt"), []byte("the answer is 42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := w.run("start")
	if out.Text != "Parent done." {
		t.Fatalf("parent text = %q", out.Text)
	}
	results := toolResults(out.Messages)
	id := agentIDRe.FindStringSubmatch(results[0])[1]
	trailer, _ := strconv.ParseInt(tokensRe.FindStringSubmatch(results[0])[1], 10, 64)

	w.mu.Lock()
	defer w.mu.Unlock()
	var started event.TaskStarted
	var progress []event.TaskProgress
	for _, e := range w.events {
		switch e := e.(type) {
		case event.TaskStarted:
			started = e
		case event.TaskProgress:
			progress = append(progress, e)
		}
	}
	if started.TaskID != id {
		t.Fatalf("task_started for %q, want %q", started.TaskID, id)
	}
	if len(progress) != 2 {
		t.Fatalf("%d progress events, want 2 (one per reply with tool calls): %+v", len(progress), progress)
	}
	for i, want := range []struct {
		uses int
		last string
	}{{2, "Read"}, {3, "Grep"}} {
		p := progress[i]
		if p.TaskID != id || p.ToolUseID != started.ToolUseID || p.Origin.AgentID != id || p.Description != "look around" || p.SubagentType != "general-purpose" {
			t.Errorf("progress %d names %+v, want task %s of tool use %s", i, p, id, started.ToolUseID)
		}
		if p.Usage.ToolUses != want.uses || p.LastToolName != want.last {
			t.Errorf("progress %d: %d tool uses, last %q; want %d, %q", i, p.Usage.ToolUses, p.LastToolName, want.uses, want.last)
		}
		if p.Usage.TotalTokens <= 0 || p.Usage.Duration <= 0 {
			t.Errorf("progress %d: %d tokens in %v, want both positive", i, p.Usage.TotalTokens, p.Usage.Duration)
		}
	}
	if a, b := progress[0].Usage.TotalTokens, progress[1].Usage.TotalTokens; !(a < b && b < trailer) {
		t.Errorf("tokens %d then %d, trailer %d: want them growing, and below the final count", a, b, trailer)
	}
}

// TestTaskNotificationUsage: a background agent's notification event carries what it used.
func TestTaskNotificationUsage(t *testing.T) {
	w := newWorld(t, backgroundScenario(), worldOptions{})
	w.run("start")
	if n, err := w.tasks.WaitIdle(t.Context(), background.MainOwner); err != nil || n != 1 {
		t.Fatalf("WaitIdle = %d, %v", n, err)
	}
	// The report is queued before its event is sent (a frontend woken by the event finds it
	// waiting), so the event may still be on its way when WaitIdle returns.
	var note *event.TaskNotification
	waittest.Until(t, "the task's notification event", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, e := range w.events {
			if n, ok := e.(event.TaskNotification); ok {
				note = &n
			}
		}
		return note != nil
	})
	if note.Usage == nil {
		t.Fatalf("notification %+v, want one with usage", note)
	}
	if u := note.Usage; u.TotalTokens <= 0 || u.ToolUses != 0 || u.Duration <= 0 {
		t.Errorf("usage = %+v, want tokens and a duration, no tool uses", *u)
	}
}
