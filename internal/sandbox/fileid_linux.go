package sandbox

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// fileIdentity is fi's device, inode and status change time: a file moved in has another
// identity, and a change time only the kernel sets.
func fileIdentity(fi fs.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("%d:%d:%d", st.Dev, st.Ino, st.Ctim.Nano())
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

// statAt is the state of name in the directory open as dir, not following a link: one name
// resolved, not the whole path, which halves what a scan of an object store costs.
func statAt(dir *os.File, name string) (objFile, bool) {
	var st unix.Stat_t
	if err := unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return objFile{}, false
	}
	mode := fs.FileMode(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	default:
		mode |= fs.ModeIrregular
	}
	return objFile{size: st.Size, mtime: st.Mtim.Nano(), mode: mode, id: stamp{dev: st.Dev, ino: st.Ino, ctime: st.Ctim.Nano()}}, true
}
