//go:build !unix

package atomicfile

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteNoLinks is WriteFile refusing a path with a symbolic link among its directories (a
// *LinkError). Here the directories are checked by path before the write, so a link swapped in
// between the check and the write is followed; unix systems hold the walk open.
func WriteNoLinks(path string, data []byte, perm os.FileMode) error {
	if err := checkAbs(path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return WriteFile(path, data, perm)
}

// ReplaceNoLinks is Replace refusing a path with a symbolic link among its directories.
func ReplaceNoLinks(path string, data []byte, old fs.FileInfo) error {
	if err := checkAbs(path); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	return Replace(path, data, old)
}

// CreateNoLinks is Create refusing a path with a symbolic link among its directories.
func CreateNoLinks(path string, data []byte, perm os.FileMode) error {
	if err := checkAbs(path); err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	return Create(path, data, perm)
}

// OpenNoLinks is os.OpenFile refusing a path with a symbolic link among its directories or at
// its end.
func OpenNoLinks(path string, flag int, perm os.FileMode) (*os.File, error) {
	if err := checkAbs(path); err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return nil, &LinkError{Link: path}
	}
	return os.OpenFile(path, flag, perm)
}

// MkdirAllNoLinks is os.MkdirAll (0o755) refusing a path with a symbolic link on the way.
func MkdirAllNoLinks(path string) error {
	if err := checkAbs(filepath.Join(path, "_")); err != nil {
		return fmt.Errorf("make %s: %w", path, err)
	}
	return os.MkdirAll(path, 0o755)
}

// checkAbs is checkParents of path from its volume's root.
func checkAbs(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	return checkParents(filepath.VolumeName(abs)+string(filepath.Separator), abs)
}

// RemoveNoLinks is os.Remove refusing a path with a symbolic link among its directories.
func RemoveNoLinks(path string) error {
	if err := checkAbs(path); err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return os.Remove(path)
}

// RemoveBeneath is RemoveNoLinks for rel below root (root's own links followed).
func RemoveBeneath(root, rel string) error {
	p := filepath.Join(root, rel)
	if err := checkParents(root, p); err != nil {
		return fmt.Errorf("remove %s: %w", p, err)
	}
	return os.Remove(p)
}

// ChmodBeneath sets the permission bits of the regular file rel below root; a link on the way
// is a *LinkError, anything but a regular file at rel an error wrapping ErrNotRegular.
func ChmodBeneath(root, rel string, mode fs.FileMode) error {
	p := filepath.Join(root, rel)
	if err := checkParents(root, p); err != nil {
		return fmt.Errorf("chmod %s: %w", p, err)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("chmod %s: %w", p, ErrNotRegular)
	}
	return os.Chmod(p, mode.Perm())
}

// checkParents finds the link nearest root among the directories from root (exclusive) down to
// path's.
func checkParents(root, path string) error {
	root = filepath.Clean(root)
	var dirs []string
	for dir := filepath.Dir(filepath.Clean(path)); dir != root && filepath.Dir(dir) != dir; dir = filepath.Dir(dir) {
		dirs = append(dirs, dir)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if fi, err := os.Lstat(dirs[i]); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return &LinkError{Link: dirs[i]}
		}
	}
	return nil
}
