//go:build unix

package permission

import (
	"os"
	"syscall"
)

func statIdentity(fi os.FileInfo) (fileID, uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, 0, false
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, uint64(st.Nlink), true //nolint:unconvert // widths differ by platform
}
