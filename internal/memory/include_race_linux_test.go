package memory

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/keel-dev/keel/internal/swaptest"
	"github.com/keel-dev/keel/internal/waittest"
)

// ruleFixture is a repository with a path-scoped rule including docs/notes.md, and a secret
// under secrets/ that opts refuses.
func ruleFixture(t *testing.T) (fx fixture, notes string, opts Options) {
	t.Helper()
	fx = newFixture(t, map[string]string{
		"repo/.git/HEAD":           "ref: refs/heads/main\n",
		"repo/.keel/rules/api.md":  "---\npaths: [\"src/**\"]\n---\nAPI rules: see @../../docs/notes.md\n",
		"repo/docs/notes.md":       "the notes\n",
		"repo/secrets/k.txt":       "TOPSECRET-123\n",
		"repo/sub/pkg/placeholder": "",
	})
	opts = Options{Cwd: fx.repo, Home: fx.home, ManagedPath: fx.managed, Refuse: swaptest.RefuseUnder(filepath.Join(fx.repo, "secrets"))}
	return fx, filepath.Join(fx.repo, "docs", "notes.md"), opts
}

// TestRuleIncludeSwappedForALinkIsNeverRead: a path-scoped rule's include, read on the first
// touch of a matching file, exchanged in a loop with a link to a refused file: what is judged
// is what is opened, with no link on the way, so the secret never loads (adversary11 F4).
func TestRuleIncludeSwappedForALinkIsNeverRead(t *testing.T) {
	fx, notes, opts := ruleFixture(t)
	link := filepath.Join(fx.repo, "docs", "l.md")
	if err := os.Symlink(filepath.Join(fx.repo, "secrets", "k.txt"), link); err != nil {
		t.Fatal(err)
	}
	swaptest.Start(t, notes, link)
	for range 1000 {
		s, err := Load(opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range s.Touch([]string{filepath.Join(fx.repo, "src", "a.go")}) {
			if strings.Contains(f.Content, "TOPSECRET") {
				t.Fatalf("a refused file was included: %s: %q", f.Display, f.Content)
			}
		}
	}
}

// TestRuleIncludeSwappedForAFIFODoesNotHang: the include exchanged with a FIFO in a loop;
// every touch returns (adversary11 F6).
func TestRuleIncludeSwappedForAFIFODoesNotHang(t *testing.T) {
	fx, notes, opts := ruleFixture(t)
	fifo := filepath.Join(fx.repo, "docs", "f.md")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	swaptest.Start(t, notes, fifo)
	done := make(chan error, 1)
	go func() {
		for range 500 {
			s, err := Load(opts)
			if err != nil {
				done <- err
				return
			}
			s.Touch([]string{filepath.Join(fx.repo, "src", "a.go")})
		}
		done <- nil
	}()
	if err := waittest.Recv(t, "the touches to return", done); err != nil {
		t.Fatal(err)
	}
}

// TestLinkedIncludeStillRead: an include that is a stable link to an allowed file loads that
// file's text.
func TestLinkedIncludeStillRead(t *testing.T) {
	fx, notes, opts := ruleFixture(t)
	if err := os.Rename(notes, filepath.Join(fx.repo, "docs", "real.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real.md", notes); err != nil {
		t.Fatal(err)
	}
	s, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	got := s.Touch([]string{filepath.Join(fx.repo, "src", "a.go")})
	if len(got) != 2 || got[1].Content != "the notes\n" {
		t.Errorf("touch loaded %q", displays(got))
	}
}
