//go:build linux

package hooks

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/keel-dev/keel/internal/sandbox"
	"github.com/keel-dev/keel/internal/settings"
)

func TestMain(m *testing.M) {
	sandbox.Dispatch(os.Args) // the sandbox's helper is this binary, re-executed
	os.Exit(m.Run())
}

// TestHooksInSandbox: with a sandbox (sandbox.wrapHooks), a hook writes in the project but
// not outside it; without, it writes where it likes.
func TestHooksInSandbox(t *testing.T) {
	project := t.TempDir()
	wd, _ := os.Getwd()
	outside, err := os.MkdirTemp(wd, ".sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	sb := sandbox.New(sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{project}}), sandbox.Options{})
	if err := sb.Available(); errors.Is(err, sandbox.ErrUnavailable) {
		t.Skipf("no sandbox on this machine: %v", err)
	}
	group := []settings.HookGroup{{Event: "PreToolUse", Matcher: "Edit", Hooks: []settings.HookCommand{{Type: "command",
		Command: "touch in-project; touch " + filepath.Join(outside, "escaped")}}, From: settings.Origin{Scope: settings.ScopeUser}}}
	r, _ := New(Config{Hooks: group, ProjectDir: project, Trusted: true, Sandbox: sb})
	r.Run(t.Context(), PreToolUse, editInput())
	if _, err := os.Stat(filepath.Join(project, "in-project")); err != nil {
		t.Errorf("a sandboxed hook could not write in the project: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped")); err == nil {
		t.Error("a sandboxed hook wrote outside the project")
	}
	r, _ = New(Config{Hooks: group, ProjectDir: project, Trusted: true})
	r.Run(t.Context(), PreToolUse, editInput())
	if _, err := os.Stat(filepath.Join(outside, "escaped")); err != nil {
		t.Errorf("without a sandbox the hook did not run as written: %v", err)
	}
}
