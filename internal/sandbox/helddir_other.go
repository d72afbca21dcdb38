//go:build !linux

package sandbox

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/keel-dev/keel/internal/atomicfile"
)

// heldDir is a directory disarm changes. Here, without openat2, it is its path: a link a
// command still running swaps into it could redirect the changes (Linux holds it open).
type heldDir struct{ path string }

func holdDir(path string) (*heldDir, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("open %s: not a directory", path)
	}
	return &heldDir{path: path}, nil
}

func (d *heldDir) close() {}

func (d *heldDir) exists(name string) bool {
	_, err := os.Lstat(filepath.Join(d.path, name))
	return err == nil
}

func (d *heldDir) moveTo(name string, dst *heldDir, newName string) error {
	return os.Rename(filepath.Join(d.path, name), filepath.Join(dst.path, newName))
}

func (d *heldDir) symlink(target, name string) error {
	return os.Symlink(target, filepath.Join(d.path, name))
}

func (d *heldDir) mkdir(name string) (*heldDir, error) {
	p := filepath.Join(d.path, name)
	if err := os.Mkdir(p, 0o700); err != nil {
		return nil, err
	}
	return &heldDir{path: p}, nil
}

func (d *heldDir) writeFile(name string, data []byte) error {
	return atomicfile.WriteFile(filepath.Join(d.path, name), data, 0o644)
}

// openRegular opens path for reading only when it is a regular file, without blocking.
func openRegular(path string) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("open %s: not a regular file", path)
	}
	return os.Open(path)
}

func (d *heldDir) readRegular(name string, max int64) ([]byte, error) {
	p := filepath.Join(d.path, name)
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("read %s: %w", p, errNotRegular)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	return readOpen(f, max)
}
