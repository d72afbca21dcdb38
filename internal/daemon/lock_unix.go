//go:build unix

package daemon

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

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

// lockPatience is how long takeLock keeps trying a lock that another process holds.
const lockPatience = time.Second

// onLockBusy is called each time takeLock finds the lock held (a test's hook).
var onLockBusy = func() {}

// takeLock is tryLock for a process that is to be the lock's holder (a supervisor, a job):
// held is true only when the lock stays held for lockPatience. A probe of locked takes the
// lock for an instant, and a supervisor that started during one must not take the probe for
// a supervisor already running and exit — the client that started it would then find no
// supervisor at all.
func takeLock(path string) (*os.File, bool, error) {
	deadline := time.Now().Add(lockPatience)
	delay := time.Millisecond
	for {
		f, held, err := tryLock(path)
		if err != nil || !held || time.Now().After(deadline) {
			return f, held, err
		}
		onLockBusy()
		time.Sleep(delay)
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// locked reports whether some process holds the lock at path. It probes by taking the lock,
// so two probes at once can each see the other's: only a lock held at three tries counts.
func locked(path string) bool {
	for try := 1; ; try++ {
		f, held, err := tryLock(path)
		if err != nil {
			return false
		}
		if !held {
			_ = f.Close()
			return false
		}
		if try == 3 {
			return true
		}
		time.Sleep(time.Millisecond)
	}
}

// detach makes a started process its own session leader: a terminal's hangup or a signal to
// the launcher's process group does not reach it.
func detachAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// alive reports whether pid runs. A zombie does not: a stopped supervisor stays one for good
// where init does not reap, and must not pass for the supervisor that runs now.
func alive(pid int) bool { return procgroup.Alive(pid) }

// terminateOne asks process pid to stop.
func terminateOne(pid int) error { return syscall.Kill(pid, syscall.SIGTERM) }
