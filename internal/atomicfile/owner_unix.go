//go:build unix

package atomicfile

import (
	"io/fs"
	"os"
	"syscall"
)

// HardLinks is how many names the file of info has; 1 where the system does not say.
func HardLinks(info fs.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// keepOwner gives f the owner and group of old when they differ from the ones f was created
// with; only a privileged process may give a file away, so for others this fails.
func keepOwner(f *os.File, old fs.FileInfo) error {
	want, ok := old.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	info, err := f.Stat()
	if err != nil {
		return err
	}
	have, ok := info.Sys().(*syscall.Stat_t)
	if !ok || (have.Uid == want.Uid && have.Gid == want.Gid) {
		return nil
	}
	return f.Chown(int(want.Uid), int(want.Gid))
}
