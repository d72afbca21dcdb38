package skill

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/sandbox"
)

// TestMain lets this test binary serve as the sandbox's helper for the sandboxed shell lines.
func TestMain(m *testing.M) {
	sandbox.Dispatch(os.Args)
	os.Exit(m.Run())
}

// TestShellLinesSayWhatTheSandboxDisarmed: a shell line run in the sandbox that makes a
// repository whose configuration names a program leaves, in its place, what the sandbox
// disarmed as it ended.
func TestShellLinesSayWhatTheSandboxDisarmed(t *testing.T) {
	l := newLayout(t)
	write(t, l.root, ".keel/commands/mk.md", "---\nallowed-tools: Bash(git:*)\n---\nMade: !`git init -q r && git -C r config core.fsmonitor 'touch x'`")
	sb := sandbox.New(sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{l.cwd}}), sandbox.Options{})
	if err := sb.Available(); errors.Is(err, sandbox.ErrUnavailable) {
		t.Skipf("no sandbox on this machine: %v", err)
	}
	allow := func(context.Context, string, []string) error { return nil }
	c, _ := l.load(t, func(o *Options) { o.AllowShell, o.Sandbox = allow, sb })
	inv, ok, err := c.Expand(t.Context(), "/mk")
	if !ok || err != nil {
		t.Fatalf("Expand = %v, %v", ok, err)
	}
	if want := "[Sandbox: the command wrote " + filepath.Join(l.cwd, "r", ".git", "config") + ", a git configuration that sets core.fsmonitor"; !strings.Contains(inv.Text, want) {
		t.Errorf("the expansion does not say what was disarmed:\n%s", inv.Text)
	}
}

// TestSandboxedShellLineKeepsPythonCache: the bytecode cache keel gives what it runs outside
// (PYTHONPYCACHEPREFIX, in keel's directory, read-only inside) is not a sandboxed shell line's:
// Python there keeps its __pycache__ as usual.
func TestSandboxedShellLineKeepsPythonCache(t *testing.T) {
	l := newLayout(t)
	write(t, l.root, ".keel/commands/py.md", "---\nallowed-tools: Bash(echo:*)\n---\nSaw: !`echo \"prefix=[$PYTHONPYCACHEPREFIX]\"`")
	sb := sandbox.New(sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{l.cwd}, KeelHome: t.TempDir()}), sandbox.Options{})
	if err := sb.Available(); errors.Is(err, sandbox.ErrUnavailable) {
		t.Skipf("no sandbox on this machine: %v", err)
	}
	allow := func(context.Context, string, []string) error { return nil }
	c, _ := l.load(t, func(o *Options) { o.AllowShell, o.Sandbox = allow, sb })
	inv, ok, err := c.Expand(t.Context(), "/py")
	if !ok || err != nil {
		t.Fatalf("Expand = %v, %v", ok, err)
	}
	if !strings.Contains(inv.Text, "prefix=[]") {
		t.Errorf("the sandboxed line saw another bytecode cache:\n%s", inv.Text)
	}
}

// TestShellLineNotRunWhenTheSandboxCannotConfineIt: when the sandbox is on but refuses a
// command — here a Read deny glob matching more files in the working directory than can be
// masked, which a command can bring about by making files — the shell line is not run at
// all, as Bash's command is not: running it outside instead would let one command move the
// next out of the sandbox (adversary12b H1).
func TestShellLineNotRunWhenTheSandboxCannotConfineIt(t *testing.T) {
	l := newLayout(t)
	for i := range 300 {
		write(t, l.cwd, ".env.x"+strconv.Itoa(i), "")
	}
	marker := filepath.Join(t.TempDir(), "ran")
	write(t, l.root, ".keel/commands/mk.md", "---\nallowed-tools: Bash(touch:*)\n---\nMade: !`touch "+marker+"`")
	sb := sandbox.New(sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{l.cwd},
		ReadDeny: []sandbox.PathRule{{Spec: "./.env.*", Dir: l.cwd}}}), sandbox.Options{})
	if err := sb.Available(); errors.Is(err, sandbox.ErrUnavailable) {
		t.Skipf("no sandbox on this machine: %v", err)
	}
	allow := func(context.Context, string, []string) error { return nil }
	c, _ := l.load(t, func(o *Options) { o.AllowShell, o.Sandbox = allow, sb })
	inv, ok, err := c.Expand(t.Context(), "/mk")
	if !ok || err != nil {
		t.Fatalf("Expand = %v, %v", ok, err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the shell line ran outside the sandbox:\n%s", inv.Text)
	}
	if !strings.Contains(inv.Text, "[shell command not run: touch "+marker+": sandbox: the command is not run") {
		t.Errorf("the expansion does not say the line was not run:\n%s", inv.Text)
	}
}
