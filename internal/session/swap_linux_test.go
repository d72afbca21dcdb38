package session

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/swaptest"
)

// TestFileToolsUnderASwapInASession is adversary10's N6 run through a whole session: while a
// command in the background exchanges the file a Read names with a link to a Read-denied
// secret, and the file a Write names with a link to .claude/settings.json, the model's many
// Reads and Writes (acceptEdits, nobody to ask) never bring the secret into a request and
// never write the settings file: each call acts on the file the check approved, or fails.
func TestFileToolsUnderASwapInASession(t *testing.T) {
	cwd, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, cwd, map[string]string{"secrets/k.txt": "TOPSECRET-123\n", "x.txt": "decoy\n", ".claude/.keep": ""})
	x, w := filepath.Join(cwd, "x.txt"), filepath.Join(cwd, "w.json")
	links := map[string]string{"l.txt": "secrets/k.txt", "w.json": "z.json", "v.json": ".claude/settings.json"}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(cwd, name)); err != nil {
			t.Fatal(err)
		}
	}
	var uses []scripted.Block
	for range 150 {
		uses = append(uses, scripted.ToolUse("Read", map[string]any{"file_path": x}),
			scripted.ToolUse("Write", map[string]any{"file_path": w, "content": `{"hooks":{}}`}))
	}
	h := newHarness(t, calls(uses...), Options{Cwd: cwd, PermissionMode: "acceptEdits",
		SettingsArgs: []string{`{"permissions":{"deny":["Read(./secrets/**)"]}}`}})
	stopRead := swaptest.Start(t, x, filepath.Join(cwd, "l.txt"))
	stopWrite := swaptest.Start(t, w, filepath.Join(cwd, "v.json"))
	h.send(t, "go")
	stopRead()
	stopWrite()
	if strings.Contains(h.bodies(), "TOPSECRET") {
		t.Error("the Read-denied file reached the model")
	}
	if _, err := os.Lstat(filepath.Join(cwd, ".claude", "settings.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf(".claude/settings.json was written (%v)", err)
	}
}
