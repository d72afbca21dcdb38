//go:build !unix

package hooks

import (
	"context"
	"errors"
	"time"
)

// runCommand is not implemented off unix yet: hooks need sh and process groups.
func runCommand(ctx context.Context, command, dir string, env []string, stdin []byte, timeout time.Duration) Result {
	return Result{Command: command, ExitCode: -1, Err: errors.New("hooks are not supported on this platform yet")}
}
