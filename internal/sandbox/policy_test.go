package sandbox_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/keel-dev/keel/internal/sandbox"
	"github.com/keel-dev/keel/internal/settings"
)

// TestPolicyModes: --sandbox wins over the settings; unset, sandbox.enabled decides, else the
// default; read-only has no writable root; workspace-write has the working directories,
// allowWrite and the caches, and protects a repository's configuration inside them.
func TestPolicyModes(t *testing.T) {
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	on := &settings.Sandbox{Enabled: settings.Value[bool]{V: true, From: settings.Origin{Scope: "user"}}}
	on.Filesystem.AllowWrite = []settings.Value[string]{{V: "~/.gradle"}}
	in := sandbox.Input{Dirs: []string{ws}, Home: "/home/u", Caches: []string{"/home/u/.cache"}}
	for _, tc := range []struct {
		mode sandbox.Mode
		sb   *settings.Sandbox
		want sandbox.Mode
	}{
		{sandbox.ModeAuto, nil, map[bool]sandbox.Mode{true: sandbox.ModeWorkspaceWrite, false: sandbox.ModeOff}[sandbox.DefaultOn]},
		{sandbox.ModeAuto, on, sandbox.ModeWorkspaceWrite},
		{sandbox.ModeOff, on, sandbox.ModeOff},
		{sandbox.ModeReadOnly, on, sandbox.ModeReadOnly},
	} {
		in := in
		in.Mode, in.Settings = tc.mode, tc.sb
		if got := sandbox.NewPolicy(in).Mode; got != tc.want {
			t.Errorf("--sandbox %q with %+v: mode %q, want %q", tc.mode, tc.sb, got, tc.want)
		}
	}
	in.Settings = on
	in.Mode = sandbox.ModeReadOnly
	if p := sandbox.NewPolicy(in); len(p.Writable) != 0 || p.WritableAt(filepath.Join(ws, "x")) {
		t.Errorf("read-only has writable roots: %v", p.Writable)
	}
	in.Mode = sandbox.ModeAuto
	p := sandbox.NewPolicy(in)
	for _, w := range []string{ws, "/home/u/.gradle", "/home/u/.cache"} {
		if !slices.Contains(p.Writable, w) {
			t.Errorf("workspace-write lacks %s: %v", w, p.Writable)
		}
	}
	for _, ro := range []string{".git/config", ".git/hooks/pre-commit", ".mcp.json", ".claude/settings.json", ".keel/x"} {
		if p.WritableAt(filepath.Join(ws, ro)) {
			t.Errorf("%s is writable", ro)
		}
	}
	if !p.WritableAt(filepath.Join(ws, ".git", "index")) || p.Why(filepath.Join(ws, ".gitmodules")) != "keel's always-read-only paths" {
		t.Errorf("git's index not writable, or .gitmodules not explained: %q", p.Why(filepath.Join(ws, ".gitmodules")))
	}
}

// TestUnavailableOnce: a sandbox that cannot start says why to Options.Unavailable once,
// however many commands find it out; a headless run in auto permission mode (Unattended)
// makes that an error for each command, naming why.
func TestUnavailableOnce(t *testing.T) {
	ws := t.TempDir()
	var told []error
	s := sandbox.New(sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{ws}}),
		sandbox.Options{Executable: filepath.Join(ws, "no-keel"), Unavailable: func(err error) { told = append(told, err) }})
	for range 3 {
		if err := s.Available(); err == nil {
			t.Fatal("a sandbox without its helper is available")
		}
	}
	if len(told) != 1 {
		t.Errorf("told %d times: %v", len(told), told)
	}
	if p := s.Policy(); p.FailIfUnavailable {
		t.Errorf("an attended run fails: %+v", p)
	}
	p := sandbox.NewPolicy(sandbox.Input{Dirs: []string{ws}, Unattended: true})
	if !p.FailIfUnavailable || p.FailWhy == "" {
		t.Errorf("an unattended run in auto mode: fail %v, why %q", p.FailIfUnavailable, p.FailWhy)
	}
}
