package sandbox

import (
	"os"
	"path/filepath"
	"testing"
)

// TestHeldDirIgnoresSwaps: a directory disarm holds stays the one it opened — a link swapped
// into its path afterwards (as a command still running could) leads the moves nowhere — and a
// path with a link in it is not opened at all.
func TestHeldDirIgnoresSwaps(t *testing.T) {
	base := t.TempDir()
	for _, d := range []string{"hooks", "outside"} {
		if err := os.Mkdir(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(base, "hooks", "git"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	parent, err := holdDir(base)
	if err != nil {
		t.Fatal(err)
	}
	defer parent.close()
	hooks, err := holdDir(filepath.Join(base, "hooks"))
	if err != nil {
		t.Fatal(err)
	}
	defer hooks.close()
	into, err := parent.mkdir("aside")
	if err != nil {
		t.Fatal(err)
	}
	defer into.close()
	// The swap: the directory keel made moves away, a link to another takes its name.
	if err := os.Rename(filepath.Join(base, "aside"), filepath.Join(base, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "outside"), filepath.Join(base, "aside")); err != nil {
		t.Fatal(err)
	}
	if err := hooks.moveTo("git", into, "git"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(base, "outside", "git")); err == nil {
		t.Error("the move followed the link swapped in")
	}
	if _, err := os.Lstat(filepath.Join(base, "moved", "git")); err != nil {
		t.Errorf("the hook is not in the directory keel made: %v", err)
	}
	if err := into.writeFile("config", []byte("[core]\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(base, "outside", "config")); err == nil {
		t.Error("the write followed the link swapped in")
	}
	if d, err := holdDir(filepath.Join(base, "aside")); err == nil {
		d.close()
		t.Error("a path through a link was opened")
	}
}
