//go:build unix

package daemon

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/keel-dev/keel/internal/procgroup"
)

// tryLock takes an exclusive flock(2) on path without waiting: held is false when another
// process holds it. The kernel releases it when the holder dies, however it dies.
func tryLock(path string) (f *os.File, held bool, err error) {
	f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("open lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, true, nil
		}
		return nil, false, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, false, nil
}

// locked reports whether some process holds the lock at path.
func locked(path string) bool {
	f, held, err := tryLock(path)
	if err != nil || held {
		return held
	}
	_ = f.Close()
	return false
}

// detach makes a started process its own session leader: a terminal's hangup or a signal to
// the launcher's process group does not reach it.
func detachAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// terminate asks the process group pgid to stop.
func terminate(pgid int) error { return syscall.Kill(-pgid, syscall.SIGTERM) }

// alive reports whether pid runs. A zombie does not: a stopped supervisor stays one for good
// where init does not reap, and must not pass for the supervisor that runs now.
func alive(pid int) bool { return procgroup.Alive(pid) }

// terminateOne asks process pid to stop.
func terminateOne(pid int) error { return syscall.Kill(pid, syscall.SIGTERM) }
