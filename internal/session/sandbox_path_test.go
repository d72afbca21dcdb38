package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/settings"
)

// TestSandboxNoticePathWritable: a session whose PATH names a directory its sandboxed commands
// can write (an activated .venv/bin in the project) says so once, at start.
func TestSandboxNoticePathWritable(t *testing.T) {
	ws := t.TempDir()
	venv := filepath.Join(ws, ".venv", "bin")
	if err := os.MkdirAll(venv, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", venv+string(os.PathListSeparator)+os.Getenv("PATH"))
	s := &Session{opts: Options{Cwd: ws, Home: t.TempDir(), Sandbox: "workspace-write"}, settings: &settings.Settings{}}
	if s.buildSandbox() == nil {
		t.Fatal("no sandbox in workspace-write")
	}
	var said []string
	for _, n := range s.notices {
		if strings.Contains(n.Text, venv) {
			said = append(said, n.Level+": "+n.Text)
		}
	}
	if len(said) != 1 || !strings.HasPrefix(said[0], "warn: Sandbox: PATH names ") {
		t.Errorf("notices naming %s: %q, want one warning", venv, said)
	}
}
