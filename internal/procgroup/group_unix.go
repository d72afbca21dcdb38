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
// keel's terminal does not reach them. A command to be started in a session of its own (a
// sandboxed one, SysProcAttr.Setsid) leads a group of its own already — its id is the
// leader's PID — and is left so: setpgid would fail on a session's leader.
func Own(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if cmd.SysProcAttr.Setsid {
		return
	}
	cmd.SysProcAttr.Setpgid = true
}

// Foreground reports whether f is a terminal whose foreground process group is this
// process's: a command a user runs at their terminal, not one in the background or started
// by a program that merely passed its terminal on.
func Foreground(f *os.File) bool {
	fg, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP)
	own, gerr := unix.Getpgid(0)
	return err == nil && gerr == nil && fg == own
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
