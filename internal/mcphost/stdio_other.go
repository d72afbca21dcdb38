//go:build !unix

package mcphost

import "os/exec"

func setProcessGroup(*exec.Cmd) {}

func signalGroup(cmd *exec.Cmd, kill bool) { _ = cmd.Process.Kill() }
