package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/mcphost"
	"github.com/keel-dev/keel/internal/sandbox"
)

// TestPolicyProtectsRunnerConfig: every configuration file a package runner reads
// (mcphost.RunnerConfigNames, which keel checks before it starts one outside the sandbox) is
// read-only where it is — at a writable root's top, below it, between it and the working
// directory — and an absent one gets no placeholder: a directory there may break the
// package manager inside; one a command makes goes aside as it ends
// (TestMadeRunnerConfigMovedAside).
func TestPolicyProtectsRunnerConfig(t *testing.T) {
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	cwd := filepath.Join(ws, "app")
	// And the files a program the user starts in a directory runs as code: direnv's, mise's,
	// a .tool-versions (path: versions), Vim's and Neovim's exrc files, lazy.nvim's.
	names := append(mcphost.RunnerConfigNames(), ".envrc", "mise.toml", ".mise.toml", "mise.local.toml", ".mise.local.toml",
		".tool-versions", ".exrc", ".vimrc", ".nvimrc", ".nvim.lua", ".lazy.lua")
	for _, n := range names {
		for _, dir := range []string{ws, filepath.Join(ws, "pkg", "deep"), cwd} {
			write(t, filepath.Join(dir, n), "x\n")
		}
	}
	empty, _ := filepath.EvalSymlinks(t.TempDir())
	p := sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{cwd, ws, empty}}).Complete()
	for _, n := range names {
		for _, dir := range []string{ws, filepath.Join(ws, "pkg", "deep"), cwd} {
			if path := filepath.Join(dir, n); p.WritableAt(path) {
				t.Errorf("%s, a package runner's or an entered directory's configuration, is writable inside the sandbox", path)
			}
		}
		if path := filepath.Join(empty, n); !p.WritableAt(path) {
			t.Errorf("%s, absent, is held read-only (a placeholder where a package manager looks): %s", path, p.Why(path))
		}
	}
}

// TestMadeRunnerConfigMovedAside: a command cannot change a package runner's configuration
// file that was there as it started, and one it makes — at the workspace's top, where an
// `npx -y PKG` server or status line started outside would read its script-shell, or below —
// goes aside as it ends, the result naming it and how to put it back; so do the files a
// program the user starts in a directory runs as code (.tool-versions, .envrc, .nvim.lua,
// mise.toml).
func TestMadeRunnerConfigMovedAside(t *testing.T) { forEachLauncher(t, testMadeRunnerConfigMovedAside) }

func testMadeRunnerConfigMovedAside(t *testing.T) {
	w := newWorld(t, nil)
	write(t, filepath.Join(w.ws, ".npmrc"), "registry=https://registry.npmjs.org/\n")
	write(t, filepath.Join(w.ws, "lib", "bunfig.toml"), "[install]\n")
	write(t, filepath.Join(w.ws, ".tool-versions"), "nodejs 20.11.0\n")
	out, said := w.say(t, `echo 'script-shell=/tmp/evil.sh' >> .npmrc; echo 'preload = ["x.ts"]' >> lib/bunfig.toml;
		echo 'nodejs path:/tmp/evil' > .tool-versions;
		echo 'yarnPath: evil.cjs' > .yarnrc.yml; mkdir -p app && echo 'node-options=--require ./evil.js' > app/.npmrc;
		echo 'touch /tmp/x' > .envrc; echo 'vim.fn.system("x")' > app/.nvim.lua; printf '[hooks]\nenter = "x"\n' > mise.toml; echo DONE`)
	if !strings.Contains(out, "DONE") {
		t.Fatalf("the script failed inside:\n%s", out)
	}
	for path, want := range map[string]string{
		filepath.Join(w.ws, ".npmrc"): "registry=https://registry.npmjs.org/\n", filepath.Join(w.ws, "lib", "bunfig.toml"): "[install]\n",
		filepath.Join(w.ws, ".tool-versions"): "nodejs 20.11.0\n",
	} {
		if got := readFile(t, path); got != want {
			t.Errorf("%s, there before the command, = %q after it, want %q", path, got, want)
		}
		if strings.Contains(said, path+",") {
			t.Errorf("%s, not made by the command, was named:\n%s", path, said)
		}
	}
	made := map[string]string{filepath.Join(w.ws, ".yarnrc.yml"): "a package runner's configuration", filepath.Join(w.ws, "app", ".npmrc"): "a package runner's configuration"}
	for _, rel := range []string{".envrc", "app/.nvim.lua", "mise.toml"} {
		made[filepath.Join(w.ws, rel)] = "a file that a program you start there runs as code"
	}
	for path, what := range made {
		if _, err := os.Lstat(path); err == nil {
			t.Errorf("%s, made by the command, is still in place", path)
		}
		if _, err := os.Lstat(path + ".keel-refused"); err != nil {
			t.Errorf("%s was not moved to %s.keel-refused: %v", path, path, err)
		}
		if !strings.Contains(said, "the command made "+path+", "+what) || !strings.Contains(said, "mv "+path+".keel-refused "+path) {
			t.Errorf("the result does not name %s and how to put it back:\n%s", path, said)
		}
	}
}
