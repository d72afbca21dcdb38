package sandbox_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/keel-dev/keel/internal/sandbox"
	"github.com/keel-dev/keel/internal/settings"
)

// homeWith makes a home directory with the entries named (a trailing / makes a directory).
func homeWith(t *testing.T, entries ...string) string {
	t.Helper()
	home := t.TempDir()
	for _, e := range entries {
		p := filepath.Join(home, e)
		dir := p
		if e[len(e)-1] != '/' {
			dir = filepath.Dir(p)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if dir != p {
			if err := os.WriteFile(p, []byte("# the user's\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return home
}

// g13Home is a home directory with the start-up files finding G13 wrote through, as a
// user has them, and a project.
var g13Home = []string{".bashrc", ".local/lib/python3.12/site-packages/", ".local/share/pnpm/store/", ".local/share/keyrings/", ".config/pip/pip.conf",
	".config/direnv/", ".bashrc.d/", ".tmux.conf", ".docker/config.json", ".wezterm.lua", ".inputrc", "go/pkg/mod/", "go/bin/",
	".cache/go-build/", ".cargo/registry/", ".npm/", ".gradle/", "proj/main.go", "bin/"}

// TestHomeRootDotEntries: with the home directory a writable root (keel started in ~), every
// dot-entry at its top level stays read-only, and ~/go/bin and ~/bin, but the caches, what
// allowWrite names, and the projects below home stay writable; with home not a writable
// root (only a project below it), nothing of this applies.
func TestHomeRootDotEntries(t *testing.T) {
	home := homeWith(t, g13Home...)
	// Links among the dot-entries to the projects and to home itself leave the projects writable.
	for link, to := range map[string]string{".w": filepath.Join(home, "proj"), ".up": home, ".root": "/"} {
		if err := os.Symlink(to, filepath.Join(home, link)); err != nil {
			t.Fatal(err)
		}
	}
	// A link on the way to a cache back to a directory above it is not followed round.
	if err := os.Symlink(filepath.Join(home, ".local"), filepath.Join(home, ".local/share/pnpm/loop")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CONFIG_HOME", "")
	for _, k := range []string{"GOBIN", "GOPATH", "GOCACHE", "GOMODCACHE", "XDG_CACHE_HOME", "CARGO_HOME", "PNPM_HOME", "npm_config_cache"} {
		t.Setenv(k, "")
	}
	sb := &settings.Sandbox{}
	sb.Filesystem.AllowWrite = []settings.Value[string]{{V: "~/.gradle"}}
	policy := func(dirs ...string) sandbox.Policy {
		return sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Settings: sb, Dirs: dirs, Home: home,
			KeelHome: filepath.Join(home, ".keel"), Caches: sandbox.Caches(home, os.Getenv)}).Complete()
	}
	readOnly := []string{".local/lib/python3.12/site-packages/evil.pth", ".local/lib/python3.13/site-packages/evil.pth", ".local/bin/git",
		".config/go/env", ".config/pip/pip.conf", ".config/direnv/direnvrc", ".bashrc.d/evil.sh", ".tmux.conf", ".docker/config.json",
		".wezterm.lua", ".inputrc", "go/bin/git", "bin/git", ".bashrc", ".local/share/keyrings/x", ".cargo/bin/git", ".cargo/config.toml"}
	writable := []string{"proj/main.go", "proj/new/file", "newproj/f", ".cache/go-build/x", ".cache/pip/x", "go/pkg/mod/cache/x",
		".cargo/registry/x", ".npm/_cacache/x", ".local/share/pnpm/store/v3/x", ".gradle/caches/x", "notes.txt"}
	for name, dirs := range map[string][]string{"cwd is home": {home}, "--add-dir home": {filepath.Join(home, "proj"), home},
		"a root above home": {filepath.Dir(home)}} {
		t.Run(name, func(t *testing.T) {
			p := policy(dirs...)
			for _, f := range readOnly {
				if p.WritableAt(filepath.Join(home, f)) {
					t.Errorf("~/%s is writable", f)
				}
			}
			for _, f := range writable {
				if !p.WritableAt(filepath.Join(home, f)) {
					t.Errorf("~/%s is not writable", f)
				}
			}
			if why := p.Why(filepath.Join(home, ".tmux.conf")); why == "" {
				t.Errorf("no reason given for ~/.tmux.conf")
			}
		})
	}
	t.Run("home not a root", func(t *testing.T) {
		p := policy(filepath.Join(home, "proj"))
		for _, f := range []string{".tmux.conf", ".inputrc", ".docker", "go/bin", "bin"} {
			if slices.Contains(p.ReadOnly, filepath.Join(home, f)) {
				t.Errorf("~/%s is on the read-only list though home is not a writable root: %d read-only paths", f, len(p.ReadOnly))
			}
		}
	})
}
