//go:build !unix

package transcript

import "os"

// lockFile is a no-op where flock is not available; two processes resuming one session are
// then not detected.
func lockFile(*os.File) error { return nil }
