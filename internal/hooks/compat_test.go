package hooks

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/compattest"
	"github.com/keel-dev/keel/internal/settings"
)

// TestCompatCorpusHooks compiles the hooks of every settings file in the shared corpus of
// real-world configuration (read in place; see its README): nothing may fail, and events keel
// does not fire (PermissionRequest, Setup, …) are reported, not fatal.
func TestCompatCorpusHooks(t *testing.T) {
	root := findCompat(t)
	var groups int
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(filepath.Base(path), "settings") {
			return err
		}
		s, _ := settings.Load(settings.Options{ManagedPath: filepath.Join(t.TempDir(), "none"), SettingsArgs: []string{path}})
		r, problems := New(Config{Hooks: s.Hooks, ProjectDir: t.TempDir()})
		for _, p := range problems {
			if !strings.Contains(p.Msg, "keel does not fire this event") {
				t.Errorf("%s: %v", path, p)
			}
		}
		groups += len(r.groups)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if groups < 20 {
		t.Errorf("compiled %d hook groups from the corpus, want at least 20", groups)
	}
}

func findCompat(t *testing.T) string {
	t.Helper()
	return compattest.Dir(t, "claude", "settings")
}
