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
	names := mcphost.RunnerConfigNames()
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
				t.Errorf("%s, a package runner's configuration, is writable inside the sandbox", path)
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
// goes aside as it ends, the result naming it and how to put it back.
func TestMadeRunnerConfigMovedAside(t *testing.T) { forEachLauncher(t, testMadeRunnerConfigMovedAside) }

func testMadeRunnerConfigMovedAside(t *testing.T) {
	w := newWorld(t, nil)
	write(t, filepath.Join(w.ws, ".npmrc"), "registry=https://registry.npmjs.org/\n")
	write(t, filepath.Join(w.ws, "lib", "bunfig.toml"), "[install]\n")
	out, said := w.say(t, `echo 'script-shell=/tmp/evil.sh' >> .npmrc; echo 'preload = ["x.ts"]' >> lib/bunfig.toml;
		echo 'yarnPath: evil.cjs' > .yarnrc.yml; mkdir -p app && echo 'node-options=--require ./evil.js' > app/.npmrc; echo DONE`)
	if !strings.Contains(out, "DONE") {
		t.Fatalf("the script failed inside:\n%s", out)
	}
	for path, want := range map[string]string{
		filepath.Join(w.ws, ".npmrc"): "registry=https://registry.npmjs.org/\n", filepath.Join(w.ws, "lib", "bunfig.toml"): "[install]\n",
	} {
		if got := readFile(t, path); got != want {
			t.Errorf("%s, there before the command, = %q after it, want %q", path, got, want)
		}
		if strings.Contains(said, path+",") {
			t.Errorf("%s, not made by the command, was named:\n%s", path, said)
		}
	}
	for _, made := range []string{filepath.Join(w.ws, ".yarnrc.yml"), filepath.Join(w.ws, "app", ".npmrc")} {
		if _, err := os.Lstat(made); err == nil {
			t.Errorf("%s, made by the command, is still in place", made)
		}
		if _, err := os.Lstat(made + ".keel-refused"); err != nil {
			t.Errorf("%s was not moved to %s.keel-refused: %v", made, made, err)
		}
		if !strings.Contains(said, "the command made "+made+", a package runner's configuration") || !strings.Contains(said, "mv "+made+".keel-refused "+made) {
			t.Errorf("the result does not name %s and how to put it back:\n%s", made, said)
		}
	}
}
