package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHomeRootFinding: `keel doctor` says when the home directory's dot-entries are kept
// read-only because a writable root holds it, naming them — and says nothing of it when home
// is not a writable root.
func TestHomeRootFinding(t *testing.T) {
	home := t.TempDir()
	for _, d := range []string{".tmux.conf.d", "proj"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	in := Input{Mode: ModeWorkspaceWrite, Dirs: []string{home}, Home: home}
	f, ok := homeRootFinding(NewPolicy(in).Complete())
	if !ok || !strings.Contains(f.Detail, ".tmux.conf.d") || !strings.Contains(f.Detail, "writable root holds the home directory") {
		t.Errorf("home as a writable root: %v %+v", ok, f)
	}
	in.Dirs = []string{filepath.Join(home, "proj")}
	if f, ok := homeRootFinding(NewPolicy(in).Complete()); ok {
		t.Errorf("home below no writable root: %+v", f)
	}
}
