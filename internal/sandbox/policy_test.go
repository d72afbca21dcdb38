package sandbox_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
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
	p := sandbox.NewPolicy(in).Complete()
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

// TestPolicyGitGuard: inside a writable root, git's configuration, hooks and commondir are
// read-only for the root's repository, a submodule's gitdir and a nested repository; the
// objects, refs and index stay writable; the gitdirs and the directories leading to them
// are pinned; a root without .git has its .git read-only.
func TestPolicyGitGuard(t *testing.T) {
	ws := t.TempDir()
	for _, d := range []string{".git/objects", ".git/refs", ".git/modules/a/b/objects", ".git/modules/a/b/refs", "deep/nested/.git/objects", "deep/nested/.git/refs"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{".git/HEAD", ".git/config", ".git/modules/a/b/HEAD", ".git/modules/a/b/config", "deep/nested/.git/HEAD", "deep/nested/.git/config"} {
		if err := os.WriteFile(filepath.Join(ws, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	plain := t.TempDir()
	given := sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{ws, plain}})
	// The search for repositories is left to the first command: a session that never runs
	// one does not pay for it. Completing does not change the policy it was given.
	nested := filepath.Join(ws, "deep/nested/.git/config")
	if !given.WritableAt(nested) {
		t.Error("NewPolicy searched the writable roots for repositories; that is Complete's work")
	}
	sb := sandbox.New(given, sandbox.Options{Executable: "/nonexistent"})
	if !sb.Policy().WritableAt(nested) {
		t.Error("a new sandbox searched the writable roots before its first command")
	}
	p := given.Complete()
	if !given.WritableAt(nested) {
		t.Error("Complete changed the policy it was called on")
	}
	sandbox.Doctor(t.Context(), sb)
	if sb.Policy().WritableAt(nested) {
		t.Error("after doctor, the sandbox's policy still lacks what the search found")
	}
	for _, ro := range []string{".git/config", ".git/commondir", ".git/config.worktree", ".git/hooks/x", ".git/info/attributes", ".git/objects/info/alternates", ".git/modules/a/b/config",
		".git/modules/a/b/commondir", ".git/modules/a/b/hooks/x", "deep/nested/.git/config", "deep/nested/.git/hooks/x"} {
		if p.WritableAt(filepath.Join(ws, ro)) {
			t.Errorf("%s is writable", ro)
		}
	}
	for _, w := range []string{".git/index", ".git/objects/x", ".git/refs/heads/main", ".git/HEAD", ".git/modules/a/b/index", "deep/nested/.git/index", "deep/x"} {
		if !p.WritableAt(filepath.Join(ws, w)) {
			t.Errorf("%s is not writable", w)
		}
	}
	for _, pin := range []string{".git", ".git/modules", ".git/modules/a", ".git/modules/a/b", "deep", "deep/nested", "deep/nested/.git"} {
		if !slices.Contains(p.Pinned, filepath.Join(ws, pin)) {
			t.Errorf("%s is not pinned: %v", pin, p.Pinned)
		}
	}
	if p.WritableAt(filepath.Join(plain, ".git", "config")) || p.WritableAt(filepath.Join(plain, ".git")) {
		t.Error("a root without .git can be made a repository")
	}
	if len(p.Warnings) != 0 {
		t.Errorf("warnings for a small tree: %v", p.Warnings)
	}
}

// TestPolicyManyMatches: a Read deny glob with more matches than are masked one by one
// masks the directory holding them; when that directory holds the working directory, the
// policy refuses every command instead, and doctor says why.
func TestPolicyManyMatches(t *testing.T) {
	ws := t.TempDir()
	for i := range 300 {
		for _, d := range []string{"a", "b"} {
			if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(ws, d, fmt.Sprintf("k%03d.key", i)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	p := sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{ws}, ReadDeny: []sandbox.PathRule{{Spec: "./a/*.key"}}}).Complete()
	if !slices.Equal(p.Masked, []string{filepath.Join(ws, "a")}) || len(p.Problems) != 0 {
		t.Errorf("masked %v, problems %v; want the directory a masked", p.Masked, p.Problems)
	}
	p = sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{ws}, ReadDeny: []sandbox.PathRule{{Spec: "*.key"}}}).Complete()
	if len(p.Problems) != 1 || slices.Contains(p.Masked, ws) {
		t.Fatalf("a glob spread over the workspace: masked %v, problems %v", p.Masked, p.Problems)
	}
	s := sandbox.New(p, sandbox.Options{})
	if s.Available() == nil {
		if _, err := s.Confine(exec.Command("true")); err == nil || !strings.Contains(err.Error(), "*.key") {
			t.Errorf("a command ran with an unmaskable glob: %v", err)
		}
	}
	var found bool
	for _, f := range sandbox.Doctor(t.Context(), s) {
		found = found || (f.Status == "fail" && strings.Contains(f.Detail, "*.key"))
	}
	if !found {
		t.Error("doctor does not say why every command is refused")
	}
}

// TestPolicyGitGuardWarns: where the protection of repositories is incomplete — the search
// for them stopped at its depth, a .git that is a symbolic link (replaceable) — the policy
// says so rather than leaving it silent.
func TestPolicyGitGuardWarns(t *testing.T) {
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, strings.Repeat("d/", 16)), 0o755); err != nil {
		t.Fatal(err)
	}
	gitdir := t.TempDir()
	if err := os.Symlink(gitdir, filepath.Join(ws, ".git")); err != nil {
		t.Fatal(err)
	}
	p := sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{ws}}).Complete()
	var deep, link bool
	for _, w := range p.Warnings {
		deep = deep || strings.Contains(w, "deep")
		link = link || strings.Contains(w, "symbolic link")
	}
	if !deep || !link {
		t.Errorf("warnings %q lack the depth bound or the linked .git", p.Warnings)
	}
}

// TestCachesLeavePATHReadOnly: of pnpm's home, which pnpm setup puts first on PATH, only the
// store is writable — a program planted beside pnpm's would shadow git.
func TestCachesLeavePATHReadOnly(t *testing.T) {
	env := map[string]string{"PNPM_HOME": "/opt/pnpm"}
	caches := sandbox.Caches("/home/u", func(k string) string { return env[k] })
	for _, c := range caches {
		if c == "/opt/pnpm" || c == "/home/u/.local/share/pnpm" {
			t.Errorf("%s, on PATH, is writable", c)
		}
	}
	for _, want := range []string{"/opt/pnpm/store", "/home/u/.local/share/pnpm/store"} {
		if !slices.Contains(caches, want) {
			t.Errorf("pnpm's store %s is not writable: %v", want, caches)
		}
	}
}

// TestCachesLeaveCargoBinReadOnly: a $CARGO_HOME elsewhere than ~/.cargo is a cache, writable,
// but its bin/ (on PATH), env and config stay read-only, as ~/.cargo's do.
func TestCachesLeaveCargoBinReadOnly(t *testing.T) {
	cargo := filepath.Join(t.TempDir(), "cargo")
	t.Setenv("CARGO_HOME", cargo)
	p := sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{t.TempDir()}, Home: "/home/u",
		Caches: sandbox.Caches("/home/u", os.Getenv)})
	for _, home := range []string{cargo, "/home/u/.cargo"} {
		for _, ro := range []string{"bin/git", "env", "config", "config.toml"} {
			if p.WritableAt(filepath.Join(home, ro)) {
				t.Errorf("%s is writable", filepath.Join(home, ro))
			}
		}
		if !p.WritableAt(filepath.Join(home, "registry", "x")) {
			t.Errorf("%s, cargo's cache, is not writable", filepath.Join(home, "registry"))
		}
	}
}

// TestOddCachesLeaveProtectedPaths: a cache variable set to the home directory itself, or to
// a directory holding a protected path, makes that directory writable — and the protected
// paths inside it stay read-only.
func TestOddCachesLeaveProtectedPaths(t *testing.T) {
	home := t.TempDir()
	ws := filepath.Join(home, "proj")
	if err := os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "XDG_CACHE_HOME", "npm_config_cache", "CARGO_HOME", "PNPM_HOME"} {
		for _, v := range []string{home, filepath.Join(home, ".config"), filepath.Join(ws, ".git")} {
			t.Run(k+"="+v, func(t *testing.T) {
				env := map[string]string{k: v}
				p := sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{ws}, Home: home, KeelHome: filepath.Join(home, ".keel"),
					Caches: sandbox.Caches(home, func(k string) string { return env[k] })}).Complete()
				for _, ro := range []string{".bashrc", ".local/bin/git", ".cargo/bin/git", ".config/git/config", ".keel/settings.json", "proj/.git/config", "proj/.git/hooks/pre-commit"} {
					if p.WritableAt(filepath.Join(home, ro)) {
						t.Errorf("%s is writable", ro)
					}
				}
			})
		}
	}
}
