//go:build unix

package team

import (
	"context"
	"errors"
	"syscall"
	"time"

	"github.com/keel-dev/keel/internal/procgroup"
)

// killTeammate ends a teammate process of this host, and what it started: SIGTERM to its
// process group (a worker leads its own), SIGKILL if that is not gone after grace. It reports
// whether the process is gone.
func killTeammate(pid int, grace time.Duration) bool {
	target := pid
	if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
		target = -pid
	}
	if err := syscall.Kill(target, syscall.SIGTERM); errors.Is(err, syscall.ESRCH) {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	err := waitGone(ctx, pid, target)
	cancel()
	if err == nil {
		return true
	}
	_ = syscall.Kill(target, syscall.SIGKILL)
	ctx, cancel = context.WithTimeout(context.Background(), grace)
	defer cancel()
	return waitGone(ctx, pid, target) == nil
}

func waitGone(ctx context.Context, pid, target int) error {
	if target < 0 {
		return procgroup.Wait(ctx, pid)
	}
	for !procgroup.Gone(pid) && pidAlive(pid) {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}
