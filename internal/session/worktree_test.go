package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/gittest"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

// allToolResults is the text of every tool_result in the session's history.
func allToolResults(h *harness) string {
	var out []string
	for _, m := range h.sess.History() {
		for _, b := range m.Content {
			if b.Type == message.TypeToolResult {
				out = append(out, message.Message{Content: b.Content}.TextOf())
			}
		}
	}
	return strings.Join(out, "\n")
}

// TestWorktreeEnterResumeExit: the session enters a new worktree, edits there, ends without
// leaving it, is resumed in the worktree, and leaves it keeping it.
func TestWorktreeEnterResumeExit(t *testing.T) {
	repo := gittest.New(t)
	home := t.TempDir()
	wtPath := filepath.Join(repo.Dir, ".keel", "worktrees", "feature")
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "work apart"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("EnterWorktree", map[string]string{"name": "feature"})}},
		{When: scripted.Match{ToolResult: "EnterWorktree"}, Times: 1, Reply: []scripted.Block{
			scripted.ToolUse("Write", map[string]string{"file_path": "notes.txt", "content": "in the worktree\n"})}},
		{When: scripted.Match{ToolResult: "Write"}, Reply: []scripted.Block{scripted.Text("written")}},
		{When: scripted.Match{UserText: "same name"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("EnterWorktree", map[string]string{"name": "feature"})}},
		{When: scripted.Match{UserText: "done here"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("ExitWorktree", map[string]string{"action": "remove"})}},
		{When: scripted.Match{ToolResult: "ExitWorktree"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("ExitWorktree", map[string]string{"action": "keep"})}},
		{When: scripted.Match{ToolResult: "ExitWorktree"}, Reply: []scripted.Block{scripted.Text("back")}},
	}}
	h := newHarness(t, sc, Options{Cwd: repo.Dir, Home: home, PermissionMode: "bypassPermissions"})
	h.send(t, "work apart")
	if got := h.sess.Cwd(); got != wtPath {
		t.Fatalf("cwd after EnterWorktree = %s, want %s", got, wtPath)
	}
	if b, err := os.ReadFile(filepath.Join(wtPath, "notes.txt")); err != nil || string(b) != "in the worktree\n" {
		t.Fatalf("the relative Write did not land in the worktree: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(repo.Dir, "notes.txt")); err == nil {
		t.Fatal("the Write landed in the main work tree")
	}
	id := h.sess.ID()
	if err := h.sess.Close(); err != nil {
		t.Fatal(err)
	}

	h2 := newHarnessOn(t, h.srv, Options{Cwd: repo.Dir, Home: home, Resume: id, PermissionMode: "bypassPermissions"})
	if got := h2.sess.Cwd(); got != wtPath {
		t.Fatalf("the resumed session is in %s, want the worktree %s", got, wtPath)
	}
	h2.send(t, "same name")
	if res := allToolResults(h2); !strings.Contains(res, "already works in worktree feature") {
		t.Errorf("EnterWorktree inside a worktree: %q", res)
	}
	h2.send(t, "done here")
	res := allToolResults(h2)
	if !strings.Contains(res, "has uncommitted changes") || !strings.Contains(res, "no one to ask in a headless run") || !strings.Contains(res, "Nothing was removed") {
		t.Errorf("ExitWorktree remove with changes was not refused headless: %q", res)
	}
	if !strings.Contains(res, "are kept at") {
		t.Errorf("ExitWorktree keep: %q", res)
	}
	if got := h2.sess.Cwd(); got != repo.Dir {
		t.Errorf("cwd after ExitWorktree = %s, want %s", got, repo.Dir)
	}
	if _, err := os.Stat(filepath.Join(wtPath, "notes.txt")); err != nil {
		t.Errorf("the kept worktree lost its file: %v", err)
	}
}

// TestEnterWorktreeOutsideGit: outside a repository EnterWorktree is an error and makes
// nothing; the session stays where it was.
func TestEnterWorktreeOutsideGit(t *testing.T) {
	cwd := t.TempDir()
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "work apart"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("EnterWorktree", map[string]string{"name": "x"})}},
		{When: scripted.Match{ToolResult: "EnterWorktree"}, Reply: []scripted.Block{scripted.Text("ok")}},
	}}
	h := newHarness(t, sc, Options{Cwd: cwd, PermissionMode: "bypassPermissions"})
	h.send(t, "work apart")
	if res := allToolResults(h); !strings.Contains(res, "needs a git repository") {
		t.Errorf("EnterWorktree outside git: %q", res)
	}
	if h.sess.Cwd() != cwd {
		t.Errorf("cwd moved to %s", h.sess.Cwd())
	}
	if _, err := os.Stat(filepath.Join(cwd, ".keel")); err == nil {
		t.Error("EnterWorktree outside git left a .keel directory")
	}
}

// TestExitWorktreeAsksBeforeDiscarding: removing a worktree with changes goes to the user
// through the session's permission asker, even in bypassPermissions mode and although the
// model passed discard_changes; a no keeps the worktree, a yes removes it and its branch.
func TestExitWorktreeAsksBeforeDiscarding(t *testing.T) {
	repo := gittest.New(t)
	wtPath := filepath.Join(repo.Dir, ".keel", "worktrees", "scratch")
	remove := map[string]any{"action": "remove", "discard_changes": true}
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "work apart"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("EnterWorktree", map[string]string{"name": "scratch"})}},
		{When: scripted.Match{ToolResult: "EnterWorktree"}, Times: 1, Reply: []scripted.Block{
			scripted.ToolUse("Write", map[string]string{"file_path": "draft.txt", "content": "draft\n"})}},
		{When: scripted.Match{ToolResult: "Write"}, Reply: []scripted.Block{scripted.Text("written")}},
		{When: scripted.Match{UserText: "throw it away"}, Reply: []scripted.Block{scripted.ToolUse("ExitWorktree", remove)}},
		{When: scripted.Match{ToolResult: "ExitWorktree"}, Reply: []scripted.Block{scripted.Text("ok")}},
	}}
	var asks []permission.AskRequest
	answers := []permission.Answer{permission.DenyAnswer("not yet"), permission.AllowOnce()}
	asker := permission.AskerFunc(func(_ context.Context, req permission.AskRequest) (permission.Answer, error) {
		asks = append(asks, req)
		if len(asks) > len(answers) {
			t.Errorf("asked %d times: %+v", len(asks), req)
			return permission.DenyAnswer("too many"), nil
		}
		return answers[len(asks)-1], nil
	})
	h := newHarness(t, sc, Options{Cwd: repo.Dir, PermissionMode: "bypassPermissions", Asker: asker})
	h.send(t, "work apart")
	if len(asks) != 0 {
		t.Fatalf("entering and writing asked: %+v", asks)
	}
	h.send(t, "throw it away")
	if len(asks) != 1 || asks[0].Request.Tool != "ExitWorktree" || !strings.Contains(asks[0].Reason, "uncommitted changes") {
		t.Fatalf("the removal did not ask the user: %+v", asks)
	}
	if res := allToolResults(h); !strings.Contains(res, "not yet") || !strings.Contains(res, "Nothing was removed") {
		t.Errorf("a no did not refuse the removal: %q", res)
	}
	if _, err := os.Stat(filepath.Join(wtPath, "draft.txt")); err != nil || h.sess.Cwd() != wtPath {
		t.Fatalf("after a no the worktree must stay, and the session in it: %v, cwd %s", err, h.sess.Cwd())
	}
	h.send(t, "throw it away")
	if len(asks) != 2 {
		t.Fatalf("the second removal asked %d times in all", len(asks))
	}
	if _, err := os.Stat(wtPath); !os.IsNotExist(err) {
		t.Errorf("after a yes the worktree is still there: %v", err)
	}
	if out := repo.Git("branch", "--list", "keel/scratch"); strings.TrimSpace(out) != "" {
		t.Errorf("after a yes the branch is still there: %q", out)
	}
	if h.sess.Cwd() != repo.Dir {
		t.Errorf("cwd after the removal = %s, want %s", h.sess.Cwd(), repo.Dir)
	}
}
