package sandbox_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/gitexec"
	"github.com/keel-dev/keel/internal/sandbox"
)

// TestRepositoryEnteredDisarmed: a bare repository a command made past the depth the
// release's search goes to, with a configuration that names a program, is disarmed once the
// session's shell is in it ([sandbox.Sandbox.Entered]) — git outside, the status line's or a
// hook's, runs there next — and again at the release of a later command that arms it while
// the session stays there, without being told again; the user's repository the session
// returns to is left alone.
func TestRepositoryEnteredDisarmed(t *testing.T) { forEachLauncher(t, testRepositoryEnteredDisarmed) }

func testRepositoryEnteredDisarmed(t *testing.T) {
	base := sandbox.VisibleDir(t)
	ws := filepath.Join(base, "ws")
	newRepo(t, ws)
	w := gitWorld(t, ws, false)
	deep := filepath.Join(ws, "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n")
	fsmonitor := func() string {
		t.Helper()
		out, _ := gitexec.Runner{}.Output(t.Context(), ws, "config", "--file", filepath.Join(deep, "config"), "--get", "core.fsmonitor")
		return strings.TrimSpace(string(out))
	}
	mark := "MARK=" + filepath.Join(base, "PWNED")
	if out := w.run(t, gitPrelude+"mkgitdir "+deep+" && echo DONE", mark); !strings.Contains(out, "DONE") {
		t.Fatalf("the script failed inside:\n%s", out)
	}
	said := strings.Join(w.s.Entered(deep), "\n")
	if got := fsmonitor(); got != "" {
		t.Errorf("core.fsmonitor = %q in the repository entered, want it gone", got)
	}
	if !strings.Contains(said, filepath.Join(deep, "config")+", a git configuration that sets core.fsmonitor") {
		t.Errorf("Entered does not say what it disarmed: %q", said)
	}

	out, said := w.say(t, gitPrelude+"evilcfg >> "+filepath.Join(deep, "config")+" && echo DONE", mark)
	if !strings.Contains(out, "DONE") {
		t.Fatalf("the second script failed inside:\n%s", out)
	}
	if got := fsmonitor(); got != "" || !strings.Contains(said, filepath.Join(deep, "config")) {
		t.Errorf("a later command armed the repository the session is in: core.fsmonitor = %q; said %q", got, said)
	}

	if said := w.s.Entered(ws); len(said) != 0 {
		t.Errorf("the user's repository was disarmed: %q", said)
	}
}

// TestRepositoryInACacheLayerDisarmed: a repository a command makes in a toolchain cache lands
// in keel's upper layer of its overlay, outside the writable roots, where the command can name
// it by its real path. Named by a .git file the command leaves in the workspace, it is
// disarmed as the command ends, so git outside in that folder runs nothing it set; entered
// by the shell (a cd into keel's directory for the layers), it is disarmed too.
func TestRepositoryInACacheLayerDisarmed(t *testing.T) {
	forEachLauncher(t, testRepositoryInACacheLayerDisarmed)
}

func testRepositoryInACacheLayerDisarmed(t *testing.T) {
	base := sandbox.VisibleDir(t)
	cache, keelHome := filepath.Join(base, "cache"), filepath.Join(base, "keel")
	write(t, filepath.Join(cache, "kept"), "x\n")
	w := newWorld(t, func(in *sandbox.Input) { in.Caches, in.KeelHome = []string{cache}, keelHome })
	upper := filepath.Join(sandbox.CacheDir(keelHome, cache), "upper")
	mark := filepath.Join(base, "PWNED")
	fsmonitor := func(gitDir string) string {
		t.Helper()
		out, _ := gitexec.Runner{}.Output(t.Context(), base, "config", "--file", filepath.Join(gitDir, "config"), "--get", "core.fsmonitor")
		return strings.TrimSpace(string(out))
	}

	out, said := w.say(t, gitPrelude+fmt.Sprintf(`set -e; git init -q %[1]s/e6 && evilcfg >> %[1]s/e6/.git/config
mkdir -p sub6 && echo "gitdir: %[2]s/e6/.git" > sub6/.git && echo DONE`, cache, upper), "MARK="+mark)
	if !strings.Contains(out, "DONE") {
		t.Fatalf("the script failed inside:\n%s", out)
	}
	if got := fsmonitor(filepath.Join(upper, "e6", ".git")); got != "" || !strings.Contains(said, filepath.Join(upper, "e6", ".git", "config")) {
		t.Errorf("the repository in the cache's layer kept core.fsmonitor = %q; said %q", got, said)
	}
	gitOutside(t, filepath.Join(w.ws, "sub6"), t.TempDir(), base)
	if _, err := os.Lstat(mark); err == nil {
		t.Error("git outside ran what the command set in the cache's layer")
	}

	if out := w.run(t, gitPrelude+fmt.Sprintf("git init -q %[1]s/e7 && evilcfg >> %[1]s/e7/.git/config && echo DONE", cache), "MARK="+mark); !strings.Contains(out, "DONE") {
		t.Fatalf("the second script failed inside:\n%s", out)
	}
	said = strings.Join(w.s.Entered(filepath.Join(upper, "e7")), "\n")
	if got := fsmonitor(filepath.Join(upper, "e7", ".git")); got != "" || !strings.Contains(said, filepath.Join(upper, "e7", ".git", "config")) {
		t.Errorf("the repository the shell entered in the cache's layer kept core.fsmonitor = %q; said %q", got, said)
	}
}
