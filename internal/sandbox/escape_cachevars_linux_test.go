package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/sandbox"
)

// TestEscapeCargoHome: with $CARGO_HOME elsewhere than ~/.cargo, the sandbox keeps it writable
// as a cache, but a command cannot put a program in its bin/ (on the user's PATH, where it
// would shadow git) nor write its env or config.
func TestEscapeCargoHome(t *testing.T) { forEachLauncher(t, testEscapeCargoHome) }

func testEscapeCargoHome(t *testing.T) {
	base := sandbox.VisibleDir(t)
	cargo := filepath.Join(base, "cargo")
	if err := os.MkdirAll(filepath.Join(cargo, "registry"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CARGO_HOME", cargo)
	w := cacheWorld(t, base, filepath.Join(base, "home"))
	for _, f := range []string{"bin/git", "env", "config", "config.toml"} {
		t.Run(f, func(t *testing.T) {
			if out := w.run(t, `mkdir -p "$(dirname "$CARGO_HOME/`+f+`")" && echo pwned > "$CARGO_HOME/`+f+`" && echo ESCAPED`); strings.Contains(out, "ESCAPED") {
				t.Errorf("$CARGO_HOME/%s was written inside the sandbox:\n%s", f, out)
			}
			if _, err := os.Lstat(filepath.Join(cargo, f)); err == nil {
				t.Errorf("$CARGO_HOME/%s is there after the command", f)
			}
		})
	}
	if out := w.run(t, `echo ok > "$CARGO_HOME/registry/f" && cat "$CARGO_HOME/registry/f"`); !strings.Contains(out, "ok") {
		t.Errorf("cargo's cache in $CARGO_HOME is not writable:\n%s", out)
	}
}

// TestEscapeOddCaches: a cache variable set to the home directory itself, or to a directory
// holding a protected path (the repository's .git), makes that directory writable, and the
// protected paths inside it stay read-only — the mounts that protect them come after the
// cache's.
func TestEscapeOddCaches(t *testing.T) { forEachLauncher(t, testEscapeOddCaches) }

func testEscapeOddCaches(t *testing.T) {
	base := sandbox.VisibleDir(t)
	home := filepath.Join(base, "home")
	write(t, filepath.Join(home, ".bashrc"), "# the user's\n")
	for _, v := range []string{"XDG_CACHE_HOME", "GOMODCACHE"} {
		t.Setenv(v, "")
	}
	for name, tc := range map[string]struct{ key, value string }{
		"XDG_CACHE_HOME is home": {"XDG_CACHE_HOME", home},
		"GOMODCACHE is .git":     {"GOMODCACHE", filepath.Join(base, "ws", ".git")},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(tc.key, tc.value)
			w := cacheWorld(t, base, home)
			if out := w.run(t, `echo ok > "$`+tc.key+`/keel-cache-probe" && echo WROTE`); !strings.Contains(out, "WROTE") {
				t.Fatalf("the cache %s=%s is not writable:\n%s", tc.key, tc.value, out)
			}
			for _, f := range []string{filepath.Join(home, ".bashrc"), filepath.Join(home, ".local/bin/git"), filepath.Join(home, ".cargo/bin/git"),
				filepath.Join(home, ".config/git/config"), filepath.Join(w.ws, ".git/config"), filepath.Join(w.ws, ".git/hooks/pre-commit")} {
				if out := w.run(t, `mkdir -p "$(dirname "`+f+`")"; echo pwned >> "`+f+`" && echo ESCAPED`); strings.Contains(out, "ESCAPED") {
					t.Errorf("%s was written inside the sandbox with %s=%s:\n%s", f, tc.key, tc.value, out)
				}
			}
			if b := readFile(t, filepath.Join(home, ".bashrc")); b != "# the user's\n" {
				t.Errorf("~/.bashrc changed: %q", b)
			}
		})
	}
}

// cacheWorld is a sandbox whose writable roots are the workspace base/ws, a repository, and
// the caches the environment names ([sandbox.Caches]), home the user's home directory.
func cacheWorld(t *testing.T, base, home string) *world {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", "")
	ws := filepath.Join(base, "ws")
	if _, err := os.Lstat(ws); err != nil {
		newRepo(t, ws)
	}
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	in := sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{ws}, Home: home, Caches: sandbox.Caches(home, os.Getenv)}
	w := &world{ws: ws, s: sandbox.New(sandbox.NewPolicy(in), sandbox.Options{})}
	skipWithoutSandbox(t, w.s)
	return w
}
