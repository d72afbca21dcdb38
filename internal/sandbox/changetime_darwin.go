package sandbox

import (
	"os"
	"syscall"
	"time"
)

// changeTime is fi's status change time, which only the kernel sets; false when unknown.
func changeTime(fi os.FileInfo) (time.Time, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(st.Ctimespec.Unix()), true
}
