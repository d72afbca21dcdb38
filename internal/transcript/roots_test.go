package transcript

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestSessionsInTwoPlaces lists, finds and continues sessions kept under keel's directory
// and under Claude Code's as one history, newest first: a session the Agent SDK wrote is
// found by keel as easily as keel's own.
func TestSessionsInTwoPlaces(t *testing.T) {
	keelHome, claudeHome := t.TempDir(), t.TempDir()
	dirs := ProjectDirs([]string{keelHome, claudeHome, keelHome, ""}, "/src/proj")
	if len(dirs) != 2 {
		t.Fatalf("project dirs %v: want the two homes once each", dirs)
	}
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	mk := func(dir, id string, mtime time.Time) {
		path := filepath.Join(dir, id+".jsonl")
		w, err := Create(t.Context(), path, testOpts(id))
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, w, userText("prompt of "+id))
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	mk(dirs[0], "keel-old", t0)
	mk(dirs[1], "sdk-new", t0.Add(2*time.Hour))
	mk(dirs[0], "keel-mid", t0.Add(time.Hour))

	list, err := ListDirs(dirs)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range list {
		ids = append(ids, s.ID)
	}
	if diff := cmp.Diff([]string{"sdk-new", "keel-mid", "keel-old"}, ids); diff != "" {
		t.Errorf("listing mismatch (-want +got):\n%s", diff)
	}
	if p, err := FindIn(dirs, "sdk-new"); err != nil || filepath.Dir(p) != dirs[1] {
		t.Errorf("FindIn(sdk-new) = %q, %v; want it under Claude Code's directory", p, err)
	}
	if latest, err := LatestIn(dirs); err != nil || latest.ID != "sdk-new" {
		t.Errorf("LatestIn = %q, %v; want sdk-new", latest.ID, err)
	}
	if _, err := FindIn(dirs, "nope"); err == nil {
		t.Error("FindIn found a session that does not exist")
	}
}
