package permission

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/keel-dev/keel/internal/toolpath"
)

// TestCheckJudgesThePathsResolvedOnce: a request whose paths were resolved already (by the gate,
// which hands the same resolution to the tool) is judged by them, not by its paths resolved
// again: a link swapped in or out meanwhile must not make the check judge another file than
// the one the tool opens (adversary10 N6).
func TestCheckJudgesThePathsResolvedOnce(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "x.txt"), []byte("decoy"), 0o644); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(ws, "secrets", "k.txt")
	c := New(Config{Home: t.TempDir(), Policy: Policy{Mode: ModeDefault, Rules: mustRules(t, Deny, "Read(./secrets/**)"), Dirs: []string{ws}}})

	req := RequestFor("Read", true, json.RawMessage(`{"file_path":"x.txt"}`), ws)
	req.Resolve()
	if want := (toolpath.Path{Given: "x.txt", Abs: filepath.Join(ws, "x.txt"), Real: filepath.Join(ws, "x.txt")}); len(req.Resolved) != 1 || req.Resolved[0] != want {
		t.Fatalf("Resolve: %+v, want %+v", req.Resolved, want)
	}
	if d := c.Evaluate(req); d.Behavior != Allow {
		t.Errorf("the harmless file: %v (%s)", d.Behavior, d.Reason)
	}
	// x.txt was a link to the secret when the gate resolved it: that is what the tool would
	// open, so that is what is judged, though x.txt is a plain file now.
	req.Resolved[0].Real = secret
	if d := c.Evaluate(req); d.Behavior != Deny {
		t.Errorf("the secret the path resolved to: %v (%s), want it denied", d.Behavior, d.Reason)
	}
}
