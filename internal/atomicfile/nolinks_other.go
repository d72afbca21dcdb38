//go:build !unix

package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteNoLinks is WriteFile refusing a path with a symbolic link among its directories (a
// *LinkError). Here the directories are checked by path before the write, so a link swapped in
// between the check and the write is followed; unix systems hold the walk open.
func WriteNoLinks(path string, data []byte, perm os.FileMode) error {
	if err := checkParents(path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return WriteFile(path, data, perm)
}

// RemoveNoLinks is os.Remove refusing a path with a symbolic link among its directories.
func RemoveNoLinks(path string) error {
	if err := checkParents(path); err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return os.Remove(path)
}

func checkParents(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	var links []string
	for dir := filepath.Dir(abs); ; dir = filepath.Dir(dir) {
		if fi, err := os.Lstat(dir); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			links = append(links, dir)
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	if len(links) > 0 {
		return &LinkError{Link: links[len(links)-1]} // the one nearest the root, as the unix walk finds first
	}
	return nil
}
