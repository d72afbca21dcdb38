package sandbox

import (
	"errors"
	"strings"
	"syscall"
)

// ErrBusy wraps a reason the sandbox could not start that says nothing about the machine: a
// limit on processes, memory, descriptors or disk that was full at that moment. A command of
// another session can fill such a limit on purpose, so such a failure is never taken for
// "this machine cannot sandbox": it is not kept, no weaker form is chosen for it, and the
// command it hit is refused, not run outside. The next command probes again.
var ErrBusy = errors.New("the sandbox could not start this time")

// busyErrnos are the errors of a limit that was full, not of a missing capability.
var busyErrnos = []syscall.Errno{syscall.EAGAIN, syscall.ENOMEM, syscall.EMFILE, syscall.ENFILE,
	syscall.EINTR, syscall.ENOSPC, syscall.EDQUOT}

// busy reports whether err, or msg (what bubblewrap or the helper printed, in C's words or
// Go's), says a limit was full.
func busy(err error, msg string) bool {
	msg = strings.ToLower(msg)
	for _, e := range busyErrnos {
		if errors.Is(err, e) || strings.Contains(msg, e.Error()) {
			return true
		}
	}
	return false
}
