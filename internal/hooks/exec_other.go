//go:build !unix

package hooks

import (
	"context"
	"errors"
	"time"

	"github.com/keel-dev/keel/internal/sandbox"
)

// runCommand is not implemented off unix yet: hooks need sh and process groups.
func runCommand(ctx context.Context, command, dir string, env []string, stdin []byte, timeout time.Duration, _ *sandbox.Sandbox) Result {
	return Result{Command: command, ExitCode: -1, Err: errors.New("hooks are not supported on this platform yet")}
}
