//go:build unix

package transcript

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on f without waiting. The lock belongs to the open file
// and goes away with it, also when the process is killed.
func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return ErrLocked
		default:
			return err
		}
	}
}
