//go:build !unix

package fscoord

import (
	"context"
	"errors"
	"os"
	"time"
)

// lockFile emulates an exclusive lock where flock(2) does not exist: a lock directory created
// beside f (creation is atomic). A holder that died leaves it behind; one older than
// staleLock is taken over. Only unix systems get crash-proof locking.
func lockFile(ctx context.Context, f *os.File) error {
	dir := f.Name() + ".d"
	for {
		err := os.Mkdir(dir, 0o700)
		if err == nil {
			return nil
		}
		if !errors.Is(err, os.ErrExist) {
			return err
		}
		if info, serr := os.Stat(dir); serr == nil && time.Since(info.ModTime()) > staleLock {
			_ = os.Remove(dir)
			continue
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(time.Millisecond):
		}
	}
}

const staleLock = 30 * time.Second

func unlockFile(f *os.File) error { return os.Remove(f.Name() + ".d") }
