//go:build !unix

package procgroup

import (
	"os"
	"os/exec"
)

// Own does nothing without process groups: the command alone is stopped.
func Own(*exec.Cmd) {}

// Terminate stops the process itself.
func Terminate(pid int) error { return Kill(pid) }

// Kill kills the process itself.
func Kill(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

// IsTerminal reports false: without process groups nothing depends on it.
func IsTerminal(*os.File) bool { return false }

// Foreground reports false: without process groups nothing depends on it.
func Foreground(*os.File) bool { return false }
