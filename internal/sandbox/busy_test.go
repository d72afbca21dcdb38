package sandbox

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
)

// TestBusy: a full limit, in Go's words or C's (bubblewrap's, the helper's), is busy; a
// missing capability is not.
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
	} {
		if got := busy(c.err, c.msg); got != c.want {
			t.Errorf("busy(%v, %q) = %v, want %v", c.err, c.msg, got, c.want)
		}
	}
}
