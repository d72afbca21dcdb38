//go:build !linux && !darwin

package sandbox

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"

	"github.com/keel-dev/keel/internal/procgroup"
)

// Run is a confined command's link to keel; outside Linux and macOS there is none.
type Run struct{}

// Release does nothing outside Linux and macOS.
func (r *Run) Release() []string { return nil }

// Planted is nil outside Linux and macOS.
func (r *Run) Planted() []string { return nil }

// Kill kills the process group led by pgid, as procgroup.Kill does.
func (r *Run) Kill(pgid int) error { return procgroup.Kill(pgid) }

// Confine fails outside Linux and macOS: keel's sandbox is built on Linux namespaces, or
// Seatbelt on macOS.
func (s *Sandbox) Confine(*exec.Cmd, ...string) (*Run, error) { return nil, s.Available() }

// ConfineAtTerminal fails outside Linux and macOS, as Confine does.
func (s *Sandbox) ConfineAtTerminal(*exec.Cmd) (*Run, error) { return nil, s.Available() }

func (s *Sandbox) probe() error {
	return fmt.Errorf("%w: keel's sandbox needs Linux or macOS (this is %s)", ErrUnavailable, runtime.GOOS)
}

func runHelper(string) error { return errors.New("the sandbox helper runs on Linux only") }

// LandlockABI is 0 outside Linux.
func LandlockABI() int { return 0 }
