package settings

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/compattest"
)

func compatDir(t *testing.T) string {
	t.Helper()
	return compattest.Dir(t, "claude", "settings")
}

// TestCompatCorpus loads every JSON file of the corpus's claude/settings folder, unchanged, as
// a settings file. Each must load (FileLoaded); the only error allowed is the one the corpus
// documents: claude-flow's obsolete hooks shape, which is reported while the rest of that file
// loads. The .mcp.json files load too, as settings made only of unknown keys.
func TestCompatCorpus(t *testing.T) {
	root := compatDir(t)
	var n int
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") {
			return err
		}
		n++
		rel, _ := filepath.Rel(root, path)
		t.Run(rel, func(t *testing.T) {
			s, _ := Load(Options{ManagedPath: filepath.Join(t.TempDir(), "none"), SettingsArgs: []string{path}})
			if s.Files[1].State != FileLoaded {
				t.Fatalf("state %s, problems %v", s.Files[1].State, s.Problems)
			}
			var errs []Problem
			for _, p := range s.Problems {
				if p.Severity == SeverityError {
					errs = append(errs, p)
				}
			}
			if strings.HasPrefix(rel, "ruvnet__claude-flow") {
				if len(errs) != 5 || !strings.Contains(errs[0].Msg, "obsolete hooks shape") {
					t.Errorf("want five obsolete-hooks errors, got %v", errs)
				}
				if len(s.Permissions.Allow) != 16 || len(s.Permissions.Deny) != 4 {
					t.Errorf("permissions not loaded beside the bad hooks: %+v", s.Permissions)
				}
				return
			}
			if len(errs) > 0 {
				t.Errorf("errors: %v", errs)
			}
			if !strings.HasSuffix(rel, ".mcp.json") && len(s.Permissions.Allow)+len(s.Permissions.Deny)+len(s.Hooks) == 0 {
				t.Errorf("nothing loaded: %+v", s)
			}
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 12 {
		t.Errorf("found %d JSON files in %s, want the corpus's 12", n, root)
	}
}
