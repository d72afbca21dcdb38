// Package procgroup is the one owner of process groups: it starts a command as the leader of
// a group of its own ([Own]) — hooks, shell commands, language servers, stdio MCP servers,
// teammate processes — signals the whole group ([Terminate], [Kill]), and waits for a killed
// group to be gone ([Wait]). SIGKILL reaches every member
// at once, but a member dies only when the kernel next schedules it, and an orphan is reaped by
// init later still: on a loaded machine either can take a while after the group's leader was
// waited for. Code that promises "everything the command started has ended when this returns"
// (a hook's timeout, a shell command's interrupt) waits here for that state.
package procgroup

import (
	"context"
	"fmt"
	"time"
)

// Poll intervals of [Wait]: the first check follows the kill closely, later ones back off.
const (
	firstPoll = time.Millisecond
	maxPoll   = 20 * time.Millisecond
)

// Wait blocks until no member of process group pgid is running (see [Gone]), or ctx ends,
// then reporting the group as still running.
func Wait(ctx context.Context, pgid int) error {
	if !poll(ctx, func() bool { return Gone(pgid) }) {
		return fmt.Errorf("process group %d still running: %w", pgid, context.Cause(ctx))
	}
	return nil
}

// WaitReaped blocks until process pid no longer exists — exited and collected by its
// parent, where Gone counts a zombie as gone — or ctx ends, then reporting false. For a
// process keel did not start: another's child it killed.
func WaitReaped(ctx context.Context, pid int) bool {
	return poll(ctx, func() bool { return !exists(pid) })
}

// poll checks done with a growing interval until it holds (true) or ctx ends (false).
func poll(ctx context.Context, done func() bool) bool {
	d := firstPoll
	t := time.NewTimer(d)
	defer t.Stop()
	for !done() {
		select {
		case <-ctx.Done():
			return done()
		case <-t.C:
			d = min(2*d, maxPoll)
			t.Reset(d)
		}
	}
	return true
}
