// Package shell runs shell commands for the Bash tool: one process group per command, so a
// timeout or an interrupt kills everything the command started; stdout and stderr interleaved
// into one capped buffer, trimmed of escape sequences, redrawn progress and repeated lines;
// the final working directory reported so a `cd` can persist; and background jobs kept in a
// [Jobs] registry.
package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/keel-dev/keel/internal/hostexec"
	"github.com/keel-dev/keel/internal/sandbox"
)

// Default limits of a foreground command.
const (
	DefaultTimeout = 2 * time.Minute
	MaxTimeout     = 10 * time.Minute
	// DefaultOutputLimit is how many bytes of output are kept (head and tail).
	DefaultOutputLimit = 30000
)

// Command describes one command to run.
type Command struct {
	// Script is the shell source, run with `bash -c` (or `sh -c` when bash is absent).
	Script string
	// Dir is the working directory; it must exist.
	Dir string
	// Env is the environment; nil inherits this process's.
	Env []string
	// Timeout bounds the run; zero means DefaultTimeout.
	Timeout time.Duration
	// OutputLimit caps the kept output in bytes; zero means DefaultOutputLimit.
	OutputLimit int
	// TempDir holds the file the shell reports its final directory in; "" is the system's
	// temporary directory. A session points it at its own directory, where the file left by
	// a killed keel is swept at the next start (see [SweepCwdFiles]).
	TempDir string
	// OnLine, if set, gets each line of output as the command writes it (without its
	// newline; a very long line in pieces), for progress reports. It is called from the
	// goroutine copying the output, so it must be quick.
	OnLine func(line string)
	// Sandbox, when set, runs the command inside it (and everything it starts); the command
	// fails to start when the sandbox cannot, and never runs outside it instead.
	Sandbox *sandbox.Sandbox
}

// Result is how a command ended.
type Result struct {
	// Output is stdout and stderr interleaved as written, trimmed as a terminal would have
	// shown it and of what repeats (see [Trim]), cut in the middle when over the limit.
	Output string
	// Truncated is how many bytes were cut from the middle of Output.
	Truncated int64
	// ExitCode is the shell's exit status; -1 when it was killed.
	ExitCode int
	// TimedOut is set when the timeout killed the command.
	TimedOut bool
	// Interrupted is set when ctx was cancelled before the command ended.
	Interrupted bool
	// OutputHeldOpen is set when a process outside the command's process group (started with
	// setsid, or a daemon) still held the output open after the group was gone: Run returned
	// with the output read so far instead of waiting for that process to end.
	OutputHeldOpen bool
	// Cwd is the shell's working directory when it exited, symlinks resolved; empty when the
	// shell did not get to report it (killed, or the script replaced its EXIT trap), or
	// reported a directory of the sandbox's own ([sandbox.Sandbox.Stranded]: Output says so).
	Cwd string
	// SandboxDenied are the connections the sandbox's proxy refused, as "host: why".
	SandboxDenied []string
	// SandboxPlanted say which submodules the command added to a repository the sandbox
	// protects with a repository of its own making, and what of the repository it left the
	// shell in was disarmed ([sandbox.Sandbox.Entered]), whose configuration git run outside
	// would read: sentences for the result.
	SandboxPlanted []string
}

// Run runs c and waits for it and every process it started in its process group. An error is
// returned only when the command could not be started; a failing command is a Result. Once the
// group is gone (ended, or killed by the timeout or ctx) Run waits for the rest of the output
// at most half a second: a process that left the group and keeps the output open does not
// hold the call (see [Result.OutputHeldOpen]).
func Run(ctx context.Context, c Command) (Result, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	limit := c.OutputLimit
	if limit <= 0 {
		limit = DefaultOutputLimit
	}
	cwdFile, err := os.CreateTemp(c.TempDir, cwdFilePrefix+"*")
	if err != nil {
		return Result{}, fmt.Errorf("create cwd file: %w", err)
	}
	cwdPath := cwdFile.Name()
	cwdFile.Close()
	defer os.Remove(cwdPath)

	buf := newCappedBuffer(limit)
	trim := newTrimmer(buf) // what repeats is dropped before the cap counts it
	var out io.Writer = trim
	if c.OnLine != nil {
		lw := &lineWriter{fn: c.OnLine}
		defer lw.flush()
		out = io.MultiWriter(trim, lw)
	}
	p, err := start(c, out, cwdPath)
	if err != nil {
		return Result{}, err
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var res Result
	select {
	case <-p.done:
	case <-timer.C:
		res.TimedOut = true
		p.kill()
	case <-ctx.Done():
		res.Interrupted = true
		p.kill()
	}
	<-p.done
	// The shell is gone; whatever it left running in its group would hold the output pipe
	// open and outlive the call, so it goes too (use run_in_background to keep a process).
	p.kill()
	p.waitGone()
	res.OutputHeldOpen = !p.drain()
	res.SandboxDenied, res.SandboxPlanted = p.release()
	trim.Flush()
	res.Output, res.Truncated = buf.String()
	res.ExitCode = exitCode(p.err)
	if res.TimedOut || res.Interrupted {
		res.ExitCode = -1
	} else if cwd, err := readCwdFile(cwdPath); errors.Is(err, errCwdFile) {
		// The command can write the file (it lies where the shell inside can), and keel reads
		// it after the sandbox's checks: a file of gigabytes, or a FIFO, would kill or hold keel.
		res.Output += "\nkeel: " + err.Error() + "; the working directory stays where it was.\n"
		res.ExitCode = -1
	} else if err == nil {
		if why := c.Sandbox.Stranded(cwd); why != "" {
			// The next command starts on the host: in a directory of the sandbox's own it could
			// not start at all, and hooks run outside would use the host's directory of that name.
			res.Output += "\nkeel: the command ended in " + cwd + ", but " + why + "; the working directory stays " + c.Dir + ".\n"
		} else {
			res.Cwd = cwd
			res.SandboxPlanted = append(res.SandboxPlanted, c.Sandbox.Entered(cwd)...)
		}
	}
	return res, nil
}

// maxCwdFile bounds the file the shell reports its directory in: a path is at most PATH_MAX
// (4,096 bytes on Linux), so anything past this is not one.
const maxCwdFile = 64 << 10

// errCwdFile is a cwd file that is not one the shell wrote.
var errCwdFile = errors.New("the file the shell reports its directory in")

// readCwdFile reads the directory the shell wrote to path, without waiting on a FIFO or
// reading past maxCwdFile.
func readCwdFile(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%w is not a regular file (the command replaced it)", errCwdFile)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxCwdFile+1))
	if err != nil {
		return "", err
	}
	if len(data) > maxCwdFile {
		return "", fmt.Errorf("%w holds more than %d KiB (the command wrote to it), which no directory's name does", errCwdFile, maxCwdFile>>10)
	}
	return strings.TrimRight(string(data), "\n"), nil
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// shellPath returns bash if it is on PATH, else sh.
func shellPath() string {
	if p, err := hostexec.Path("bash"); err == nil {
		return p
	}
	return "/bin/sh"
}

// wrap makes the shell write its final directory to cwdFile when it exits, however it exits
// (an EXIT trap runs after `exit 3` and after the last command alike).
func wrap(script, cwdFile string) string {
	return "trap 'pwd -P > " + quote(cwdFile) + "' EXIT\n" + script + "\n"
}

// quote quotes s for a POSIX shell.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
