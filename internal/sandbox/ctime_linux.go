package sandbox

import (
	"io/fs"
	"syscall"
	"time"
)

// changeTime is fi's status change time (st_ctime), which no system call sets but the
// kernel's own clock; its modification time when the file system does not say.
func changeTime(fi fs.FileInfo) time.Time {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Ctim.Unix())
	}
	return fi.ModTime()
}
