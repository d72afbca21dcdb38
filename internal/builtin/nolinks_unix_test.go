//go:build unix

package builtin

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/keel-dev/keel/internal/atomicfile"
)

// TestFileToolsFollowNoSwappedLink: a file tool uses the path it resolved and checked without
// following a link on its way. A sandboxed command in the background can swap a directory of
// the workspace for a link to elsewhere (rename-exchange, in a loop) between the check and the
// use, so here the link is already there when the resolved path is used: reading, replacing,
// creating and writing in place through it all fail, and nothing where it leads is read or
// written (adversary9 F4, F5).
func TestFileToolsFollowNoSwappedLink(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "f"), []byte("SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "d")); err != nil {
		t.Fatal(err)
	}
	resolved := filepath.Join(ws, "d", "f")
	if b, err := readNoLinks(resolved); err == nil {
		t.Errorf("read through the link: %q", b)
	}
	if err := overwriteFile(resolved, []byte("planted")); err == nil {
		t.Error("a replacement was written through the link")
	}
	if err := overwriteInPlace(resolved, []byte("planted")); err == nil {
		t.Error("the file was written in place through the link")
	}
	if err := atomicfile.MkdirAllNoLinks(filepath.Join(ws, "d", "sub")); err == nil {
		t.Error("a directory was made through the link")
	}
	if err := create(t.Context(), filepath.Join(ws, "d", "new"), []byte("planted")); err == nil {
		t.Error("a file was created through the link")
	}
	if b, err := os.ReadFile(filepath.Join(outside, "f")); err != nil || string(b) != "SECRET" {
		t.Errorf("the file the link leads to: %q, %v", b, err)
	}
	for _, made := range []string{"new", "sub"} {
		if _, err := os.Lstat(filepath.Join(outside, made)); err == nil {
			t.Errorf("%s was made where the link leads", made)
		}
	}
}

// TestFileToolsWaitOnNoFIFO: a FIFO swapped in for the file a tool checked (adversary9 F8) is
// an error, at once: opening it to read or to write in place would wait for a writer or a
// reader that never comes.
func TestFileToolsWaitOnNoFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "f")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := readNoLinks(fifo); err == nil {
		t.Errorf("read a FIFO: %q", b)
	}
	if err := overwriteInPlace(fifo, []byte("x")); err == nil {
		t.Error("wrote a FIFO in place")
	}
}
