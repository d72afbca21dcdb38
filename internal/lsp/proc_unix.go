//go:build unix

package lsp

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup starts the server in a process group of its own, so killing it also ends
// the processes it started (typescript-language-server runs tsserver under node).
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killProcessGroup(p *os.Process) {
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	_ = p.Kill()
}
