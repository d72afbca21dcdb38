//go:build unix

package procgroup

import (
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// Own starts cmd (not yet started) as the leader of a process group of its own, so that it
// and everything it starts are signalled, and waited for, as one — and a Ctrl-C meant for
// keel's terminal does not reach them.
func Own(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// Terminate asks the process group led by pid to stop (SIGTERM).
func Terminate(pid int) error { return syscall.Kill(-pid, syscall.SIGTERM) }

// Kill kills the process group led by pid (SIGKILL). The group id stays reserved while any
// member lives, so this cannot hit an unrelated group.
func Kill(pid int) error { return syscall.Kill(-pid, syscall.SIGKILL) }

// IsTerminal reports whether f is a terminal — not merely a character device, which /dev/null
// is too (standard input under cron, CI, nohup and systemd).
func IsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	return err == nil
}
