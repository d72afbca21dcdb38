//go:build unix

package atomicfile

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Dir is a directory held open to walk below it without following a symbolic link: each
// directory and file is opened, and each name looked up, relative to the directory above it,
// with O_NOFOLLOW. A program keel does not control that swaps a directory of the walk for a
// link (rename-exchange, in a loop) then leads the walk nowhere: everything it finds was
// reached from the first directory through real directory entries. Not safe for concurrent
// use; Close it.
type Dir struct {
	f *os.File
}

// OpenDirNoLinks opens the directory at path, a path with no link on the way (one resolved
// already), walking from the root as OpenNoLinks does: a link swapped in for any directory
// of it, the last one included, is a *LinkError.
func OpenDirNoLinks(path string) (*Dir, error) {
	if filepath.Clean(path) == "/" {
		f, err := os.Open("/")
		if err != nil {
			return nil, err
		}
		return &Dir{f: f}, nil
	}
	f, err := OpenNoLinks(path, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	return &Dir{f: f}, nil
}

// Path is the directory's path as it was opened: where it was, not necessarily where it is.
func (d *Dir) Path() string { return d.f.Name() }

// Close closes the directory.
func (d *Dir) Close() error { return d.f.Close() }

// ReadDir returns the directory's entries sorted by name. An entry's Info is d.Lstat's: it
// does not look the name up by path.
func (d *Dir) ReadDir() ([]fs.DirEntry, error) {
	entries, err := d.f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for i, e := range entries {
		entries[i] = dirEntry{e, d}
	}
	return entries, nil
}

// OpenDir opens the directory name in d; a link there (one swapped in since ReadDir too) is
// an error, never followed.
func (d *Dir) OpenDir(name string) (*Dir, error) {
	f, err := d.OpenFile(name, os.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	return &Dir{f: f}, nil
}

// OpenFile opens name in d with flag, never following a link there.
func (d *Dir) OpenFile(name string, flag int) (*os.File, error) {
	if err := oneName(name); err != nil {
		return nil, err
	}
	fd, err := unix.Openat(int(d.f.Fd()), name, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, describe(int(d.f.Fd()), name, filepath.Join(d.Path(), name), err)
	}
	return os.NewFile(uintptr(fd), filepath.Join(d.Path(), name)), nil
}

// Lstat describes name in d, a link as a link.
func (d *Dir) Lstat(name string) (fs.FileInfo, error) {
	if err := oneName(name); err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(int(d.f.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: filepath.Join(d.Path(), name), Err: err}
	}
	return statInfo{name: name, st: st}, nil
}

// oneName refuses a name that is not one entry of a directory.
func oneName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return fmt.Errorf("%q names no entry of a directory", name)
	}
	return nil
}

// dirEntry is an entry of a Dir, its Info looked up in the held directory.
type dirEntry struct {
	fs.DirEntry
	d *Dir
}

func (e dirEntry) Info() (fs.FileInfo, error) { return e.d.Lstat(e.Name()) }

// statInfo is an fs.FileInfo from fstatat.
type statInfo struct {
	name string
	st   unix.Stat_t
}

func (s statInfo) Name() string       { return s.name }
func (s statInfo) Size() int64        { return s.st.Size }
func (s statInfo) ModTime() time.Time { return time.Unix(s.st.Mtim.Unix()) }
func (s statInfo) IsDir() bool        { return s.Mode().IsDir() }
func (s statInfo) Sys() any           { return &s.st }

func (s statInfo) Mode() fs.FileMode {
	m := fs.FileMode(s.st.Mode & 0o777)
	switch s.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	return m
}
