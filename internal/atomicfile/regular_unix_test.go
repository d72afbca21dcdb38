//go:build unix

package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestReadRegular: a regular file is read up to the cap; a FIFO is refused at once, never
// waited on; a link, at the name or on the way, is a *LinkError.
func TestReadRegular(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(file, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadRegular(file, 4); err != nil || string(b) != "0123" {
		t.Errorf("capped read = %q, %v", b, err)
	}
	if b, err := ReadRegular(file, -1); err != nil || string(b) != "0123456789" {
		t.Errorf("whole read = %q, %v", b, err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRegular(fifo, -1); !errors.Is(err, ErrNotRegular) {
		t.Errorf("FIFO: err = %v, want ErrNotRegular", err)
	}
	link := filepath.Join(dir, "l.txt")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, filepath.Join(dir, "ld")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{link, filepath.Join(dir, "ld", "f.txt")} {
		var le *LinkError
		if _, err := ReadRegular(p, -1); !errors.As(err, &le) {
			t.Errorf("ReadRegular(%s): err = %v, want a *LinkError", p, err)
		}
	}
}

// TestReadWhole: a file up to the bound is read whole; one past it, a sparse one of 1 GiB
// that costs no disk included, is ErrTooLarge, never part of it.
func TestReadWhole(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(file, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadWhole(file, 10); err != nil || string(b) != "0123456789" {
		t.Errorf("at the bound = %q, %v", b, err)
	}
	if b, err := ReadWhole(file, 9); !errors.Is(err, ErrTooLarge) || b != nil {
		t.Errorf("past the bound = %q, %v", b, err)
	}
	sparse := filepath.Join(dir, "sparse")
	if err := os.WriteFile(sparse, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(sparse, 1<<30); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadWhole(sparse, 1<<20); !errors.Is(err, ErrTooLarge) {
		t.Errorf("sparse: err = %v", err)
	}
}
