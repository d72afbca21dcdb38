//go:build unix

package shell

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/keel-dev/keel/internal/procgroup"
	"github.com/keel-dev/keel/internal/sandbox"
)

// proc is a started shell in its own process group.
type proc struct {
	cmd *exec.Cmd
	// done is closed when the shell has exited; err is its Wait error.
	done chan struct{}
	err  error
	// drained is closed when the copy of the output ended: at EOF (every process holding the
	// pipe is gone), or when drain gave up waiting for it.
	drained chan struct{}
	// out is the read end of the output pipe.
	out *os.File
	// run is the sandbox's hold on the command, released once it is gone; nil outside one.
	run *sandbox.Run
}

// start starts c's script in c's directory, in c's sandbox if it has one, its output
// (stdout and stderr on one pipe, so they interleave as written) copied into out.
func start(c Command, out io.Writer, cwdFile string) (*proc, error) {
	cmd := exec.Command(shellPath(), "-c", wrap(c.Script, cwdFile))
	cmd.Dir = c.Dir
	cmd.Env = c.Env
	cmd.Stdin = nil
	var run *sandbox.Run
	if c.Sandbox != nil {
		var extra []string
		if cwdFile != os.DevNull {
			extra = append(extra, cwdFile)
		}
		var err error
		if run, err = c.Sandbox.Confine(cmd, extra...); err != nil {
			return nil, err
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		run.Release()
		return nil, fmt.Errorf("create output pipe: %w", err)
	}
	cmd.Stdout = w
	cmd.Stderr = w
	procgroup.Own(cmd)
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		run.Release()
		return nil, fmt.Errorf("start shell in %s: %w", c.Dir, err)
	}
	w.Close() // the children hold their copies; EOF comes when the last one exits
	p := &proc{cmd: cmd, done: make(chan struct{}), drained: make(chan struct{}), out: r, run: run}
	go func() {
		defer close(p.drained)
		defer r.Close()
		io.Copy(out, r)
	}()
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// release ends the sandbox's hold on the command (its proxy, its placeholders) and returns the
// connections the proxy refused and the submodules the command planted ([sandbox.Run.Planted]);
// call it once the command is gone.
func (p *proc) release() (denied, planted []string) {
	if p.run == nil {
		return nil, nil
	}
	denied = p.run.Release()
	return denied, p.run.Planted()
}

// kill sends SIGKILL to the whole process group (through the sandbox, which under bubblewrap
// ends the sandbox's first process before it). The group id stays reserved while any member
// lives, so this cannot hit an unrelated group.
func (p *proc) kill() {
	_ = p.run.Kill(p.cmd.Process.Pid)
}

// killGrace bounds the wait for a killed group's members to die: SIGKILL cannot be caught, so
// only a process stuck in the kernel (a hung network file system) takes longer.
const killGrace = 5 * time.Second

// waitGone waits, up to killGrace, until no process of the group runs. Call it after kill and
// after the shell was reaped: its orphaned children die when next scheduled, not at once.
func (p *proc) waitGone() {
	ctx, cancel := context.WithTimeout(context.Background(), killGrace)
	defer cancel()
	_ = procgroup.Wait(ctx, p.cmd.Process.Pid) // past the grace there is nothing left to do
}

// drainGrace bounds how long the output is still read once the process group is gone. The
// group's own output is in the pipe by then and is read in microseconds; a process that left
// the group (setsid, a daemon) and kept the pipe open would make the wait for EOF last as long
// as it lives.
const drainGrace = 500 * time.Millisecond

// drain waits for the output copy to reach EOF, up to drainGrace, then stops it; call it once
// the group is gone. It reports whether EOF came: false means a process outside the group
// still holds the output open, and what it writes later is not read.
func (p *proc) drain() (eof bool) {
	t := time.NewTimer(drainGrace)
	defer t.Stop()
	select {
	case <-p.drained:
		return true
	case <-t.C:
	}
	// A deadline ends a Read in progress; pipes are pollable, but should this one not be,
	// closing it ends the Read as well.
	if err := p.out.SetReadDeadline(time.Now()); err != nil {
		p.out.Close()
	}
	<-p.drained
	return false
}
