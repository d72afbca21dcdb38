//go:build !unix

package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
)

// Dir is a directory walked without following a symbolic link. Here names are checked by
// path before they are opened, so a link swapped in between is followed; unix systems hold
// each directory open and look names up in it.
type Dir struct {
	path string
}

// OpenDirNoLinks opens the directory at path, refusing a link on the way (a *LinkError).
func OpenDirNoLinks(path string) (*Dir, error) {
	if err := checkAbs(filepath.Join(path, "_")); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(path); err != nil {
		return nil, err
	} else if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, &LinkError{Link: path}
	}
	return &Dir{path: path}, nil
}

// Path is the directory's path.
func (d *Dir) Path() string { return d.path }

// Close releases the directory.
func (d *Dir) Close() error { return nil }

// ReadDir returns the directory's entries sorted by name.
func (d *Dir) ReadDir() ([]fs.DirEntry, error) { return os.ReadDir(d.path) }

// OpenDir opens the directory name in d, refusing a link there.
func (d *Dir) OpenDir(name string) (*Dir, error) {
	p := filepath.Join(d.path, name)
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, &LinkError{Link: p}
	}
	return &Dir{path: p}, nil
}

// OpenFile opens name in d with flag, refusing a link there.
func (d *Dir) OpenFile(name string, flag int) (*os.File, error) {
	p := filepath.Join(d.path, name)
	if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, &LinkError{Link: p}
	}
	return os.OpenFile(p, flag, 0)
}

// Lstat describes name in d, a link as a link.
func (d *Dir) Lstat(name string) (fs.FileInfo, error) { return os.Lstat(filepath.Join(d.path, name)) }
