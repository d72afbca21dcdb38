package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/gittest"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/waittest"
)

const worktreeSession = "5eed0000-0000-4000-8000-00000000a0a0"

// worktreeKillScenario: the first run enters worktree "feature", writes notes.txt there and
// then waits for a model answer that never comes (held until the test ends) — the process
// is SIGKILLed there. The resumed run writes resumed.txt (a relative path: it lands in the
// session's cwd), leaves the worktree keeping it, and writes main.txt from where it returned.
func worktreeKillScenario(held <-chan struct{}) *scripted.Scenario {
	write := func(name string) []scripted.Block {
		return []scripted.Block{scripted.ToolUse("Write", map[string]string{"file_path": name, "content": name + " content\n"})}
	}
	return &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "enter", When: scripted.Match{UserText: "work apart"}, Times: 1,
			Reply: []scripted.Block{scripted.ToolUse("EnterWorktree", map[string]string{"name": "feature"})}},
		{Name: "write", When: scripted.Match{ToolResult: "EnterWorktree"}, Times: 1, Reply: write("notes.txt")},
		{Name: "held", When: scripted.Match{ToolResult: "Write"}, Times: 1,
			Reply: []scripted.Block{scripted.Text("never seen")}, Fault: &scripted.Fault{Hold: held}},
		{Name: "resumed", When: scripted.Match{UserText: "carry on"}, Times: 1, Reply: write("resumed.txt")},
		{Name: "exit", When: scripted.Match{ToolResult: "Write"}, Times: 1,
			Reply: []scripted.Block{scripted.ToolUse("ExitWorktree", map[string]string{"action": "keep"})}},
		{Name: "exited", When: scripted.Match{ToolResult: "ExitWorktree"}, Times: 1, Reply: write("main.txt")},
		{Name: "done", When: scripted.Match{ToolResult: "Write"}, Reply: []scripted.Block{scripted.Text("all done")}},
	}}
}

// A session that entered a worktree is SIGKILLed mid-turn (the real keel binary, real git),
// not closed; `keel --resume` lands in the worktree (a relative Write goes there), and
// ExitWorktree keep returns it to the repository, keeping the worktree, its branch and files.
func TestWorktreeSessionKilledResumesInTheWorktree(t *testing.T) {
	repo := gittest.New(t)
	wtPath := filepath.Join(repo.Dir, ".keel", "worktrees", "feature")
	held := make(chan struct{})
	t.Cleanup(func() { close(held) })
	srv, err := scripted.Start(t.Context(), "", worktreeKillScenario(held), scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	home := t.TempDir()
	env := append(os.Environ(), "KEEL_HOME="+home, "HOME="+t.TempDir(), "ANTHROPIC_BASE_URL="+srv.URL(), "ANTHROPIC_API_KEY=test-key")
	// keel builds a command living as long as ctx: the killed run lives on the test's context
	// (killWhen limits its wait), the resumed one, expected to finish, has one time limit.
	keel := func(ctx context.Context, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, "keel", args...)
		cmd.Env, cmd.Dir = env, repo.Dir
		return cmd
	}

	killWhen(t, keel(t.Context(), "-p", "work apart", "--session-id", worktreeSession, "--permission-mode", "bypassPermissions"),
		"the request after the Write in the worktree", func() bool {
			for _, r := range srv.Requests() {
				if r.Rule == "held" {
					return true
				}
			}
			return false
		})
	if b, err := os.ReadFile(filepath.Join(wtPath, "notes.txt")); err != nil || string(b) != "notes.txt content\n" {
		t.Fatalf("notes.txt in the worktree: %q, %v", b, err)
	}

	res, err := keel(waittest.Context(t), "--resume", worktreeSession, "-p", "carry on", "--permission-mode", "bypassPermissions").CombinedOutput()
	if err != nil || !strings.Contains(string(res), "all done") {
		t.Fatalf("the resumed run: %v\n%s", err, res)
	}
	for _, c := range []struct {
		dir, file string
		want      bool
	}{
		{wtPath, "resumed.txt", true}, // the resume landed in the worktree
		{repo.Dir, "resumed.txt", false},
		{repo.Dir, "main.txt", true}, // ExitWorktree returned to the repository
		{wtPath, "main.txt", false},
		{wtPath, "notes.txt", true}, // kept
	} {
		_, err := os.Stat(filepath.Join(c.dir, c.file))
		if got := err == nil; got != c.want {
			t.Errorf("%s in %s: present %v, want %v", c.file, c.dir, got, c.want)
		}
	}
	if list := repo.Git("worktree", "list", "--porcelain"); !strings.Contains(list, "worktree "+wtPath) || !strings.Contains(list, "branch refs/heads/keel/feature") {
		t.Errorf("the kept worktree is not in git's list:\n%s", list)
	}
	var requests []string
	for _, r := range srv.Requests() {
		requests = append(requests, r.Rule)
	}
	if got, want := strings.Join(requests, " "), "enter write held resumed exit exited done"; !strings.Contains(got, want) {
		t.Errorf("requests answered by %q, want %q in order", got, want)
	}
}
