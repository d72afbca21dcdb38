package memory

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/keel-dev/keel/internal/waittest"
)

// TestAutoDirFIFOGit: a FIFO a command left as a folder's .git does not hold AutoDir, asked
// at every session start: the folder is its own root (adversary11 F7's class).
func TestAutoDirFIFOGit(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, ".git"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() { got <- AutoDir(t.TempDir(), dir) }()
	if d := waittest.Recv(t, "AutoDir to return", got); d == "" {
		t.Error("AutoDir gave no directory")
	}
}

// TestReadIndexFIFO: a FIFO in place of MEMORY.md, read at every session's start, is an
// error at once, not a wait for a writer that never comes.
func TestReadIndexFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, AutoIndexName), 0o644); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { _, err := (&Auto{Dir: dir}).ReadIndex(); got <- err }()
	if err := waittest.Recv(t, "ReadIndex to return", got); err == nil {
		t.Error("ReadIndex read a FIFO as the index")
	}
}
