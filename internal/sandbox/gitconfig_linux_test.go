package sandbox_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/sandbox"
)

// TestPolicyGitConfigPaths: the hooks directory core.hooksPath names (relative to the working
// tree, from the repository's configuration or a file it includes) and every file the
// configuration includes — include.path and includeIf, whatever the condition, relative to
// the including file, ~ the home directory, recursively, a cycle once — are read-only, absent
// or not; a hooks path that is the working tree itself is said, not made read-only; what lies
// outside the writable roots is not listed.
func TestPolicyGitConfigPaths(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ws := t.TempDir()
	home := filepath.Join(ws, "h")
	outside := t.TempDir()
	newRepo(t, ws)
	git(t, ws, "config", "core.hooksPath", ".husky/_")
	git(t, ws, "config", "--add", "include.path", "../a.cfg")
	git(t, ws, "config", "--add", "include.path", filepath.Join(outside, "o.cfg"))
	write(t, filepath.Join(ws, "a.cfg"), "[include]\n\tpath = sub/b.cfg\n[includeIf \"gitdir:/nowhere/\"]\n\tpath = ~/c.cfg\n")
	write(t, filepath.Join(ws, "sub", "b.cfg"), "[include]\n\tpath = ../a.cfg\n[core]\n\thooksPath = hooks2\n")
	write(t, filepath.Join(outside, "o.cfg"), "[include]\n\tpath = "+filepath.Join(ws, "from-outside.cfg")+"\n")
	newRepo(t, filepath.Join(ws, "dot"))
	git(t, filepath.Join(ws, "dot"), "config", "core.hooksPath", ".")

	p := sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{ws}, Home: home}).Complete()
	for _, ro := range []string{".husky/_", ".husky/_/post-checkout", "hooks2/pre-push", "a.cfg", "sub/b.cfg", "h/c.cfg", "from-outside.cfg"} {
		if p.WritableAt(filepath.Join(ws, ro)) {
			t.Errorf("%s is writable", ro)
		}
	}
	if why := p.Why(filepath.Join(ws, "a.cfg")); !strings.Contains(why, "includes") {
		t.Errorf("Why(a.cfg) = %q", why)
	}
	if !p.WritableAt(filepath.Join(ws, "dot", "f")) || !p.WritableAt(filepath.Join(ws, "sub", "other")) {
		t.Error("the working tree itself is read-only")
	}
	if !slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, filepath.Join(ws, "dot")) }) {
		t.Errorf("no warning about the hooks path that is a working tree: %q", p.Warnings)
	}
	if slices.ContainsFunc(p.ReadOnly, func(r string) bool { return strings.HasPrefix(r, outside) }) {
		t.Errorf("a path outside the writable roots is listed: %q", p.ReadOnly)
	}
}

// TestPolicyGitConfigIncludesBounded: a configuration that includes hundreds of files has the
// first ones protected and a warning for the rest.
func TestPolicyGitConfigIncludesBounded(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ws := t.TempDir()
	newRepo(t, ws)
	var cfg strings.Builder
	for i := range 300 {
		fmt.Fprintf(&cfg, "[include]\n\tpath = ../inc/%03d.cfg\n", i)
	}
	write(t, filepath.Join(ws, ".git", "config"), "[core]\n\trepositoryformatversion = 0\n"+cfg.String())
	p := sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{ws}}).Complete()
	if p.WritableAt(filepath.Join(ws, "inc", "000.cfg")) || p.WritableAt(filepath.Join(ws, "inc", "255.cfg")) {
		t.Error("the first included files are writable")
	}
	if !p.WritableAt(filepath.Join(ws, "inc", "299.cfg")) {
		t.Error("past the bound, an included file is read-only: the bound is not applied")
	}
	if !slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, "more than 256 files") }) {
		t.Errorf("no warning past the bound: %q", p.Warnings)
	}
}
