//go:build unix

package fscoord

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive flock(2) on f, waiting for it. It is released by unlockFile,
// by closing f, or by the kernel when the process dies.
func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}

func unlockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
