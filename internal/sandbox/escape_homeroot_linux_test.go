package sandbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/sandbox"
)

// TestEscapeHomeRoot: with HOME a temporary directory that is also the workspace (keel
// started in ~), a command cannot write the start-up files finding G13 wrote through — a
// user site's .pth, ~/.config/go/env, ~/.bashrc.d, ~/.tmux.conf, direnvrc, ~/.docker's
// configuration, pip.conf, ~/.wezterm.lua, ~/.inputrc, ~/go/bin — while a project below home,
// go build with its cache, and the ~/.cache overlay still work.
func TestEscapeHomeRoot(t *testing.T) { forEachLauncher(t, testEscapeHomeRoot) }

func testEscapeHomeRoot(t *testing.T) {
	goCache := os.Getenv("GOCACHE")
	if goCache == "" {
		if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil {
			goCache = strings.TrimSpace(string(out))
		}
	}
	home := filepath.Join(sandbox.VisibleDir(t), "home")
	for _, e := range append(g13Home, ".config/go/", "proj/go.mod") {
		p := filepath.Join(home, e)
		if strings.HasSuffix(e, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		write(t, p, "# the user's\n")
	}
	write(t, filepath.Join(home, "proj/go.mod"), "module hello\n\ngo 1.22\n")
	write(t, filepath.Join(home, "proj/main.go"), "package main\n\nfunc main() { println(\"hello\") }\n")
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	for _, k := range []string{"GOBIN", "GOMODCACHE", "XDG_CACHE_HOME", "CARGO_HOME", "PNPM_HOME", "npm_config_cache", "GOFLAGS", "GOENV"} {
		t.Setenv(k, "")
	}
	t.Setenv("GOPATH", filepath.Join(home, "go"))
	// The host's build cache, a cache like ~/.cache (overlaid, never written): the build
	// below does not compile the standard library again.
	t.Setenv("GOCACHE", goCache)
	t.Setenv("GOTOOLCHAIN", "local")
	in := sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{home}, Home: home, KeelHome: filepath.Join(home, ".keel"),
		Caches: sandbox.Caches(home, os.Getenv)}
	w := &world{ws: home, s: sandbox.New(sandbox.NewPolicy(in), sandbox.Options{})}
	skipWithoutSandbox(t, w.s)
	for _, f := range []string{".local/lib/python3.12/site-packages/evil.pth", ".config/go/env", ".bashrc.d/evil.sh", ".tmux.conf",
		".config/direnv/direnvrc", ".docker/config.json", ".config/pip/pip.conf", ".wezterm.lua", ".inputrc", "go/bin/git", "bin/git",
		".bashrc", ".local/bin/git", ".config/git/config"} {
		t.Run(f, func(t *testing.T) {
			p := filepath.Join(home, f)
			before, _ := os.ReadFile(p)
			if out := w.run(t, `mkdir -p "$(dirname "`+p+`")"; echo pwned >> "`+p+`" && echo ESCAPED`); strings.Contains(out, "ESCAPED") {
				t.Errorf("~/%s was written inside the sandbox:\n%s", f, out)
			}
			if after, _ := os.ReadFile(p); string(after) != string(before) {
				t.Errorf("~/%s changed: %q", f, after)
			}
		})
	}
	t.Run("controls", func(t *testing.T) {
		if out := w.run(t, `cd proj && echo ok > new.txt && mkdir -p ../newproj && echo ok > ../newproj/f && go build -buildvcs=false -o hello . && ./hello && echo BUILT`); !strings.Contains(out, "BUILT") {
			t.Errorf("a project below home cannot be built in it:\n%s", out)
		}
		if b := readFile(t, filepath.Join(home, "proj/new.txt")); b != "ok\n" {
			t.Errorf("~/proj/new.txt = %q", b)
		}
		if out := w.run(t, `echo ok > "$HOME/.cache/go-build/probe" && cat "$HOME/.cache/go-build/probe"`); !strings.Contains(out, "ok") {
			t.Errorf("~/.cache is not writable inside:\n%s", out)
		}
		if _, err := os.Lstat(filepath.Join(home, ".cache/go-build/probe")); err == nil {
			t.Errorf("~/.cache was written for real, not through its overlay")
		}
	})
}
