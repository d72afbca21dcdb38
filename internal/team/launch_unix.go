//go:build unix

package team

import (
	"os/exec"
	"syscall"
)

// detach puts the worker in its own process group, so a Ctrl-C meant for the lead's terminal
// does not reach it.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }
