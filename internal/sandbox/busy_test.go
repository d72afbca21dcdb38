package sandbox

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
)

// TestBusy: only a missing or refused capability is the machine's answer; a full limit, in
// Go's words or C's (bubblewrap's, the helper's), and any failure that names no capability,
// is busy.
func TestBusy(t *testing.T) {
	for _, c := range []struct {
		err  error
		msg  string
		want bool
	}{
		{&os.PathError{Op: "fork/exec", Path: "/proc/self/fd/3", Err: syscall.EAGAIN}, "", true},
		{fmt.Errorf("start: %w", syscall.ENOMEM), "", true},
		{errors.New("exit status 1"), "bwrap: Creating new namespace failed: Resource temporarily unavailable", true},
		{errors.New("exit status 1"), "keel-sandbox: clone: Cannot allocate memory", true},
		{errors.New("exit status 1"), "bwrap: Can't create file at /x: No space left on device", true},
		{errors.New("exit status 1"), "open: Too many open files", true},
		{errors.New("exit status 1"), "bwrap: setting up uid map: Permission denied", false},
		{&os.PathError{Op: "fork/exec", Path: "/usr/bin/bwrap", Err: syscall.EPERM}, "", false},
		{errors.New("exit status 1"), "bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces", false},
		{errors.New("exit status 1"), "bwrap: Creating new namespace failed: Invalid argument", false},
		{errors.New("exit status 1"), "bubblewrap did not make a new pid namespace (pid:[4026531836]): the command is not run outside the sandbox", false},
		// A full limit in words no list of errno texts has: the helper's Go runtime, a
		// signal, a file that went away meanwhile.
		{errors.New("exit status 2"), "runtime: failed to create new OS thread (have 4 already; errno=11)\nruntime: may need to increase max user processes (ulimit -u)\nfatal error: newosproc", true},
		{errors.New("signal: killed"), "", true},
		{errors.New("exit status 1"), "bwrap: Can't get type of source /w/.git/config: No such file or directory", true},
	} {
		if got := busy(c.err, c.msg); got != c.want {
			t.Errorf("busy(%v, %q) = %v, want %v", c.err, c.msg, got, c.want)
		}
	}
}
