//go:build unix

package fscoord

import (
	"context"
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock(2) on f, waiting in the kernel, which hands the lock to
// the next waiter at once. A holder keeps it for one read-modify-write (about a millisecond)
// and the kernel releases a dead holder's lock, so the wait is short; only a holder stopped
// mid-change (SIGSTOP) could make it long, and ctx is checked before waiting. The lock is
// released by unlockFile, by closing f, or by the kernel when the process dies.
func lockFile(ctx context.Context, f *os.File) error {
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
		return nil
	} else if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
		return err
	}
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

func unlockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
