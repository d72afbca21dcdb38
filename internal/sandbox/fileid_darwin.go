package sandbox

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// fileIdentity is fi's device, inode and status change time: a file moved in has another
// identity, and a change time only the kernel sets.
func fileIdentity(fi fs.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("%d:%d:%d", st.Dev, st.Ino, st.Ctimespec.Nano())
	}
	return ""
}

// fileInode is fi's device and inode: which file it is, whatever is written to it.
func fileInode(fi fs.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("%d:%d", st.Dev, st.Ino)
	}
	return ""
}

// fileStamp is what fileIdentity says, as a value to compare: device, inode, change time.
func fileStamp(fi fs.FileInfo) stamp {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return stamp{dev: uint64(st.Dev), ino: st.Ino, ctime: st.Ctimespec.Nano()}
	}
	return stamp{}
}

// statAt is the state of name in the directory open as dir, not following a link.
func statAt(dir *os.File, name string) (objFile, bool) {
	fi, err := os.Lstat(filepath.Join(dir.Name(), name))
	if err != nil {
		return objFile{}, false
	}
	return objFile{size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: fi.Mode(), id: fileStamp(fi)}, true
}
