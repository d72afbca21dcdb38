//go:build !unix

package team

import (
	"os"
	"time"
)

// killTeammate ends a teammate process of this host.
func killTeammate(pid int, _ time.Duration) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return true
	}
	return p.Kill() == nil
}
