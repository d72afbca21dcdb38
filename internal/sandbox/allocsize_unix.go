//go:build linux || darwin

package sandbox

import (
	"io/fs"
	"syscall"
)

// allocatedSize is the disk space fi's file takes (its blocks), which for a sparse file is
// less than its size.
func allocatedSize(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}
