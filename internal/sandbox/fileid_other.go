//go:build !linux && !darwin

package sandbox

import (
	"io/fs"
	"os"
	"path/filepath"
)

// fileIdentity says nothing here, where no sandbox runs.
func fileIdentity(fs.FileInfo) string { return "" }

// fileInode says nothing here, where no sandbox runs.
func fileInode(fs.FileInfo) string { return "" }

// fileStamp says nothing here, where no sandbox runs.
func fileStamp(fs.FileInfo) stamp { return stamp{} }

// statAt is the state of name in the directory open as dir, not following a link.
func statAt(dir *os.File, name string) (objFile, bool) {
	fi, err := os.Lstat(filepath.Join(dir.Name(), name))
	if err != nil {
		return objFile{}, false
	}
	return objFile{size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: fi.Mode(), id: fileStamp(fi)}, true
}
