//go:build unix

package hooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync/atomic"
	"time"

	"github.com/keel-dev/keel/internal/hostexec"
	"github.com/keel-dev/keel/internal/procgroup"
	"github.com/keel-dev/keel/internal/sandbox"
)

// outputLimit caps each of a hook's stdout and stderr.
const outputLimit = 1 << 20

// waitDelay bounds how long Wait waits for output pipes after the hook is killed; only a
// descendant that left the process group can hold them that long. It also bounds the wait for
// the killed group's members to die.
const waitDelay = 2 * time.Second

// runCommand runs command with sh -c in its own process group, killing the whole group when
// the timeout passes or ctx is cancelled, so a hook's children die with it: when it returns
// after a kill, no process of the group is running any more.
func runCommand(ctx context.Context, command, dir string, env []string, stdin []byte, timeout time.Duration, sb *sandbox.Sandbox) Result {
	res := Result{Command: command, ExitCode: -1}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := hostexec.Command(tctx, "sh", "-c", command)
	cmd.Dir = dir
	cmd.Env = env
	if sb == nil {
		// Outside, Python keeps its bytecode where no sandboxed command plants any.
		cmd.Env = hostexec.PythonEnv(env)
	}
	cmd.Stdin = bytes.NewReader(stdin)
	stdout, stderr := &cappedBuffer{limit: outputLimit}, &cappedBuffer{limit: outputLimit}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	var run *sandbox.Run
	if sb != nil {
		var err error
		if run, err = sb.Confine(cmd); err != nil {
			res.Err = fmt.Errorf("run hook in the sandbox: %w", err)
			return res
		}
		defer run.Release()
	}
	procgroup.Own(cmd)
	var killed atomic.Bool
	cmd.Cancel = func() error {
		killed.Store(true)
		return run.Kill(cmd.Process.Pid)
	}
	cmd.WaitDelay = waitDelay
	start := time.Now()
	err := cmd.Run()
	if killed.Load() {
		// Wait reaped the shell; its killed children may still be dying, or waiting for init.
		gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), waitDelay)
		if perr := procgroup.Wait(gctx, cmd.Process.Pid); perr != nil {
			res.Warning = "a process started by the hook was still running after it was killed"
		}
		cancel()
	}
	res.Duration = time.Since(start)
	res.Stdout, res.Stderr = stdout.String(), stderr.String()
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		res.Cancelled = true
		res.Err = fmt.Errorf("hook cancelled: %w", context.Cause(ctx))
	case tctx.Err() != nil:
		res.TimedOut = true
		res.Err = fmt.Errorf("hook timed out after %v and was killed", timeout)
	case errors.Is(err, exec.ErrWaitDelay):
		// It exited, but something it started kept its output open.
		res.ExitCode = cmd.ProcessState.ExitCode()
		res.Warning = "a process started by the hook kept running after it exited"
	case errors.As(err, &exitErr):
		res.ExitCode = exitErr.ExitCode()
	case err != nil:
		res.Err = fmt.Errorf("run hook: %w", err)
	default:
		res.ExitCode = 0
	}
	if errors.Is(err, exec.ErrWaitDelay) && res.Err != nil {
		res.Err = fmt.Errorf("%w (%w)", res.Err, exec.ErrWaitDelay)
	}
	return res
}
