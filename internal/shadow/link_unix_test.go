//go:build unix

package shadow_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRestoreActsOnNothingThroughALinkItRestored: the checkpoint holds d as a link to a
// directory outside (a command made it in an earlier turn); the turn replaced it with a real d
// holding a large file and a file made world-writable, named as files outside are. Restoring
// the checkpoint brings the link back and neither deletes the large file's namesake outside
// nor gives the other's namesake the turn's mode: both would go through the restored link.
func TestRestoreActsOnNothingThroughALinkItRestored(t *testing.T) {
	dir, outside := realTemp(t), realTemp(t)
	for name, body := range map[string]string{"git": "the user's git", "tool": "the user's tool"} {
		if err := os.WriteFile(filepath.Join(outside, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	outsideBefore := tree(t, outside)
	sh(t, dir, "echo a > a.txt && ln -s "+outside+" d")
	before := tree(t, dir)
	r := open(t, dir, t.TempDir(), "s1")
	cp0, err := r.Capture(t.Context(), "prompt 1")
	if err != nil {
		t.Fatal(err)
	}
	sh(t, dir, "rm d && mkdir d && echo x > d/tool && chmod 777 d/tool")
	if err := os.WriteFile(filepath.Join(dir, "d", "git"), make([]byte, 80<<10), 0o644); err != nil { // past open's 64 KiB
		t.Fatal(err)
	}

	res, err := r.Restore(t.Context(), cp0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(outsideBefore, tree(t, outside)); diff != "" {
		t.Errorf("the directory the restored link names changed (-want +got):\n%s", diff)
	}
	if len(res.Removed) != 0 {
		t.Errorf("removed %v: the large file went with its directory, nothing to remove", res.Removed)
	}
	if diff := cmp.Diff(before, tree(t, dir)); diff != "" {
		t.Errorf("tree after restore (-want +got):\n%s", diff)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "d")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("d after restore: %v, %v; want the link back", fi, err)
	}
}

// realTemp is t.TempDir with its links resolved (macOS's /var is one).
func realTemp(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
