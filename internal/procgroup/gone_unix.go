//go:build unix

package procgroup

import (
	"errors"
	"syscall"
)

// Gone reports whether no member of process group pgid is running: every one has exited. A
// zombie (exited, waiting for its parent or init to reap it) counts as exited; where zombies
// cannot be told apart (no /proc), only an empty group is gone.
func Gone(pgid int) bool {
	// Signal 0 checks existence only; it also finds zombies, which is why a group that answers
	// is looked at member by member.
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	return onlyZombies(pgid)
}

// Alive reports whether process pid runs: it exists and is no zombie. A zombie whose parent
// never reaps it (a daemon's exited child under an init that does not reap) looks alive to
// signal 0 for good; where zombies cannot be told apart (no /proc), it counts as alive.
func Alive(pid int) bool {
	return pid > 0 && syscall.Kill(pid, 0) == nil && !zombie(pid)
}

// exists reports whether pid names a process, a zombie included (signal 0 finds both).
func exists(pid int) bool { return syscall.Kill(pid, 0) == nil }
