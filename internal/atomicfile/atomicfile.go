// Package atomicfile writes files so that a reader sees the old content or the new, never a
// torn mix, even across a crash: write a temp file in the same directory, fsync, rename.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// ErrNotReplaceable reports that a file cannot be replaced by a new one without changing what
// it is: it has other hard links, its owner cannot be kept, or its directory refuses new files.
// The caller then writes it in place (and accepts that a crash may tear it).
var ErrNotReplaceable = errors.New("cannot be replaced without changing its links, owner or directory")

// WriteFile replaces path with data, created with perm. The directory must exist.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return write(path, data, 0o600, func(f *os.File) error {
		if err := f.Chmod(perm); err != nil {
			return fmt.Errorf("chmod %s: %w", f.Name(), err)
		}
		return nil
	})
}

// Replace gives the existing file at path, described by old (its os.Stat), the content data,
// keeping its mode and owner. It returns an error wrapping ErrNotReplaceable, having changed
// nothing, when the file cannot be swapped for a new one without changing what it is.
func Replace(path string, data []byte, old fs.FileInfo) error {
	if HardLinks(old) > 1 {
		return fmt.Errorf("replace %s: it has other hard links: %w", path, ErrNotReplaceable)
	}
	return write(path, data, 0o600, replacing(path, old))
}

// replacing sets up the new file that replaces old at path: its owner and mode.
func replacing(path string, old fs.FileInfo) func(*os.File) error {
	mode := old.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
	return func(f *os.File) error {
		if err := keepOwner(f, old); err != nil {
			return fmt.Errorf("replace %s: keep its owner: %v: %w", path, err, ErrNotReplaceable)
		}
		if err := f.Chmod(mode); err != nil {
			return fmt.Errorf("chmod %s: %w", f.Name(), err)
		}
		return nil
	}
}

// Create writes the new file path whole, so a kill leaves no file or all of it. Unlike
// WriteFile, perm is filtered by the umask, as with os.WriteFile.
func Create(path string, data []byte, perm os.FileMode) error {
	return write(path, data, perm, nil)
}

// write puts data into a temp file next to path, created with perm (less the umask), lets
// prepare (when not nil) set its mode and owner, and renames it over path once it is on disk.
func write(path string, data []byte, perm os.FileMode, prepare func(*os.File) error) (err error) {
	dir := filepath.Dir(path)
	f, err := createTemp(dir, "."+filepath.Base(path)+".tmp", perm)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			err = fmt.Errorf("%w: %w", err, ErrNotReplaceable)
		}
		return fmt.Errorf("create temp file for %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if prepare != nil {
		if err = prepare(f); err != nil {
			return err
		}
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s to %s: %w", tmp, path, err)
	}
	// The rename is durable only once the directory entry is.
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync() // best effort: some filesystems refuse to sync directories
		d.Close()
	}
	return nil
}

// createTemp is os.CreateTemp with a mode: a new file named prefix and a random suffix.
func createTemp(dir, prefix string, perm os.FileMode) (*os.File, error) {
	for range 100 {
		name := filepath.Join(dir, prefix+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("no free temp file name %s* in %s", prefix, dir)
}
