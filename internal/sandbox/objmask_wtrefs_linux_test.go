package sandbox_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/gittest"
	"github.com/keel-dev/keel/internal/sandbox"
)

// orphanSecret commits secret at secrets/token in dir (a working tree of repo's), then resets
// it away and expires the reflogs: only the ORIG_HEAD of dir's gitdir names it.
func orphanSecret(t *testing.T, repo *gittest.Repo, dir, secret string) {
	t.Helper()
	git := func(args ...string) { repo.Git(append([]string{"-C", dir}, args...)...) }
	if err := os.MkdirAll(filepath.Join(dir, "secrets"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secrets", "token"), []byte(secret+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "-f", "secrets/token")
	git("commit", "-q", "-m", "secret")
	git("reset", "-q", "HEAD~1") // the file stays, ignored
	git("reflog", "expire", "--expire=now", "--all")
	if out := repo.Git("log", "--all", "--reflog", "--oneline", "--", "secrets"); out != "" {
		t.Fatalf("a ref still reaches the secret:\n%s", out)
	}
}

func baseRepo(t *testing.T) *gittest.Repo {
	repo := gittest.New(t)
	repo.Write("other.txt", "other\n")
	repo.Write(".gitignore", "secrets/\n")
	repo.Commit("base")
	repo.Write("other.txt", "second\n")
	repo.Commit("second")
	return repo
}

// TestObjectMaskWorktreePseudoRefs (ADV11 F1): a linked worktree outside the project has
// pseudo-refs of its own, in .git/worktrees/W, which git resolves from the project
// (worktrees/W/ORIG_HEAD); what they reach is hidden too, and watched between commands.
func TestObjectMaskWorktreePseudoRefs(t *testing.T) {
	repo := baseRepo(t)
	wt := filepath.Join(t.TempDir(), "wt")
	repo.Git("worktree", "add", "-q", "-b", "w", wt)
	repo.Write("secrets/mine", "the project's masked file\n")
	orphanSecret(t, repo, wt, "TOPSECRET-wt2")
	later := repo.Git("rev-parse", "worktrees/wt/ORIG_HEAD")
	orphanSecret(t, repo, wt, "TOPSECRET-wt1")
	w := maskedWorld(t, repo, sandbox.VisibleDir(t))
	env := gittest.Env()
	read := "git cat-file -p worktrees/wt/ORIG_HEAD:secrets/token 2>&1"
	if out := w.run(t, read, env...); strings.Contains(out, "TOPSECRET") {
		t.Errorf("inside the sandbox, through the worktree's ORIG_HEAD:\n%s", out)
	}
	// Between commands, only the worktree's ORIG_HEAD changes, to another secret.
	if err := os.WriteFile(filepath.Join(repo.Dir, ".git", "worktrees", "wt", "ORIG_HEAD"), []byte(later+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := w.run(t, read, env...); strings.Contains(out, "TOPSECRET") {
		t.Errorf("inside the sandbox, after the worktree's ORIG_HEAD moved:\n%s", out)
	}
	if got := repo.Git("cat-file", "-p", "worktrees/wt/ORIG_HEAD:secrets/token"); got != "TOPSECRET-wt2" {
		t.Errorf("outside, the worktree's secret = %q", got)
	}
}

// TestObjectMaskJunkPseudoRefs (ADV11 F2): thousands of files named as pseudo-refs at the
// top of .git, as a command can write, neither push ORIG_HEAD out of the walk nor are
// skipped silently: the object store is masked whole, and HideObjects says why.
func TestObjectMaskJunkPseudoRefs(t *testing.T) {
	repo := baseRepo(t)
	repo.Write("secrets/mine", "the project's masked file\n")
	w := maskedWorld(t, repo, sandbox.VisibleDir(t))
	env := gittest.Env()
	if out := w.run(t, "cd .git && i=1000; while [ $i -lt 5200 ]; do echo junk > A$i; i=$((i+1)); done; echo done", env...); !strings.Contains(out, "done") {
		t.Fatalf("writing the junk: %s", out)
	}
	orphanSecret(t, repo, repo.Dir, "TOPSECRET-orig")
	if out := w.run(t, "git cat-file -p ORIG_HEAD:secrets/token 2>&1; git log -p ORIG_HEAD 2>&1", env...); strings.Contains(out, "TOPSECRET") {
		t.Errorf("inside the sandbox, through ORIG_HEAD past the junk:\n%s", out)
	}
	if covers := w.s.HideObjects(); len(covers) != 1 || !strings.Contains(covers[0].Sealed, "pseudo-refs") {
		t.Errorf("HideObjects = %+v, want the store sealed, naming the junk", covers)
	}
	// The junk removed, git works again, the secret still hidden.
	for i := 1000; i < 5200; i++ {
		os.Remove(filepath.Join(repo.Dir, ".git", fmt.Sprintf("A%d", i)))
	}
	if out := w.run(t, "git cat-file -p ORIG_HEAD:secrets/token 2>&1; git log --oneline -1 2>&1", env...); strings.Contains(out, "TOPSECRET") || !strings.Contains(out, "second") {
		t.Errorf("inside the sandbox, the junk removed:\n%s", out)
	}
}
