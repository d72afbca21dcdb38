package session

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/keel-dev/keel/internal/gittest"
	"github.com/keel-dev/keel/internal/waittest"
)

// TestGitBranchFIFOs: a FIFO a command left as a folder's .git, or as a repository's HEAD,
// makes gitBranch answer "" at once; it never waits for a writer (adversary11 F7).
func TestGitBranchFIFOs(t *testing.T) {
	sub := filepath.Join(t.TempDir(), "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(sub, ".git"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := gittest.New(t)
	head := filepath.Join(r.Dir, ".git", "HEAD")
	if err := os.Remove(head); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(head, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, dir := range map[string]string{"git": sub, "HEAD": r.Dir} {
		t.Run(name, func(t *testing.T) {
			got := make(chan string, 1)
			go func() { got <- gitBranch(dir) }()
			if b := waittest.Recv(t, "gitBranch("+dir+") to return", got); b != "" {
				t.Errorf("gitBranch(%s) = %q, want \"\"", dir, b)
			}
		})
	}
}

// TestGitBranchThroughLinks: a repository reached through a linked folder still names its
// branch: links are resolved before the no-link read.
func TestGitBranchThroughLinks(t *testing.T) {
	r := gittest.New(t)
	r.Write("a.txt", "a")
	r.Commit("first")
	r.Git("checkout", "-q", "-b", "topic")
	linked := filepath.Join(t.TempDir(), "linked")
	if err := os.Symlink(r.Dir, linked); err != nil {
		t.Fatal(err)
	}
	if got := gitBranch(linked); got != "topic" {
		t.Errorf("gitBranch through a linked folder = %q, want topic", got)
	}
}
