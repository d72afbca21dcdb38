package sandbox

import (
	"errors"
	"slices"
	"strings"
	"syscall"
)

// ErrBusy wraps a reason the sandbox could not start that says nothing about the machine: a
// limit on processes, memory, descriptors or disk that was full at that moment, a helper that
// could not make its threads, a signal. A command of another session can fill such a limit
// on purpose, so such a failure is never taken for "this machine cannot sandbox": it is not
// kept, no weaker form is chosen for it, and the command it hit is refused, not run outside.
// The next command probes again.
var ErrBusy = errors.New("the sandbox could not start this time")

// busyErrnos are the errors of a limit that was full.
var busyErrnos = []syscall.Errno{syscall.EAGAIN, syscall.ENOMEM, syscall.EMFILE, syscall.ENFILE,
	syscall.EINTR, syscall.ENOSPC, syscall.EDQUOT}

// machineErrnos are the errors of a capability the machine lacks or refuses: user namespaces
// off or blocked by policy, a system call the kernel does not have or rejects.
var machineErrnos = []syscall.Errno{syscall.EPERM, syscall.EACCES, syscall.ENOSYS, syscall.EINVAL}

// machineWords are the other ways bubblewrap and keel's helper name a missing capability:
// bubblewrap's own sentence for blocked user namespaces, and the helper's refusal of a
// bubblewrap that did not make the namespaces it was asked for.
var machineWords = []string{"no permissions to creat", "is not run outside the sandbox"}

// busy reports whether err, or msg (what bubblewrap or the helper printed, in C's words or
// Go's), is not a property of the machine. Only a failure that names a missing or refused
// capability is the machine's answer; every other one — a full limit in any spelling
// ("errno=11", "fatal error: newosproc"), a signal, a file that vanished — is busy, since a
// list of the ways a limit can show would always miss one.
func busy(err error, msg string) bool {
	msg = strings.ToLower(msg)
	has := func(es []syscall.Errno) bool {
		return slices.ContainsFunc(es, func(e syscall.Errno) bool { return errors.Is(err, e) || strings.Contains(msg, e.Error()) })
	}
	if has(busyErrnos) {
		return true
	}
	for _, w := range machineWords {
		if strings.Contains(msg, w) {
			return false
		}
	}
	return !has(machineErrnos)
}
