package sandbox_test

import (
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
