package session

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/keel-dev/keel/internal/gittest"
)

func TestGitBranch(t *testing.T) {
	r := gittest.New(t)
	r.Write("a.txt", "a")
	r.Commit("first")
	r.Git("checkout", "-q", "-b", "fix/parser")
	sub := filepath.Join(r.Dir, "pkg", "deep")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	wt := filepath.Join(t.TempDir(), "wt")
	r.Git("worktree", "add", "-q", "-b", "feature", wt)
	for _, tt := range []struct{ dir, want string }{
		{r.Dir, "fix/parser"},
		{sub, "fix/parser"},
		{wt, "feature"},
		{t.TempDir(), ""},
	} {
		if got := gitBranch(tt.dir); got != tt.want {
			t.Errorf("gitBranch(%s) = %q, want %q", tt.dir, got, tt.want)
		}
	}
	r.Git("checkout", "-q", "--detach")
	if got := gitBranch(r.Dir); got != "" {
		t.Errorf("detached HEAD gave branch %q", got)
	}
}
