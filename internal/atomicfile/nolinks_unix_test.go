//go:build unix

package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestNoLinksRefusesALinkOnTheWay: a directory on the way that is a link stops the write and
// the removal (a *LinkError naming it), and nothing changes where it points; a link at the
// file's own name is replaced or removed itself, its target untouched; missing directories
// are made.
func TestNoLinksRefusesALinkOnTheWay(t *testing.T) {
	dir, outside := realDir(t), realDir(t)
	target := filepath.Join(outside, "f")
	if err := os.WriteFile(target, []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "via")); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"write":       WriteNoLinks(filepath.Join(dir, "via", "f"), []byte("planted"), 0o755),
		"write below": WriteNoLinks(filepath.Join(dir, "via", "sub", "f"), []byte("planted"), 0o755),
		"remove":      RemoveNoLinks(filepath.Join(dir, "via", "f")),
	} {
		le, ok := errors.AsType[*LinkError](err)
		if !ok || le.Link != filepath.Join(dir, "via") {
			t.Errorf("%s through the link: %v, want a link error naming it", name, err)
		}
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "outside" {
		t.Errorf("the file the link leads to: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(outside, "sub")); !os.IsNotExist(err) {
		t.Errorf("a directory was made through the link: %v", err)
	}

	// A link at the name itself.
	own := filepath.Join(dir, "new", "deeper", "own")
	if err := os.MkdirAll(filepath.Dir(own), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, own); err != nil {
		t.Fatal(err)
	}
	if err := WriteNoLinks(own, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(own); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("the link at the name was not replaced by a 0600 file: %v, %v", fi, err)
	}
	if err := os.Remove(own); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, own); err != nil {
		t.Fatal(err)
	}
	if err := RemoveNoLinks(own); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "outside" {
		t.Errorf("the file the link leads to: %q, %v", b, err)
	}
	if _, err := os.Lstat(own); !os.IsNotExist(err) {
		t.Errorf("the link was not removed: %v", err)
	}

	// Missing directories are made; a missing file's removal says it does not exist.
	made := filepath.Join(dir, "a", "b", "c")
	if err := WriteNoLinks(made, []byte("c"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(made); err != nil || string(b) != "c" {
		t.Errorf("written %q, %v", b, err)
	}
	if err := RemoveNoLinks(filepath.Join(dir, "x", "y")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("removing a file below a missing directory: %v", err)
	}
	if err := RemoveNoLinks(made); err != nil {
		t.Fatal(err)
	}
	if err := RemoveNoLinks(filepath.Dir(made)); err != nil {
		t.Errorf("an empty directory is removed, as os.Remove does: %v", err)
	}
}

// realDir is t.TempDir with its links resolved (macOS's /var is one).
func realDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
