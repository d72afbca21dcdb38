package fscoord

import (
	"context"
	"fmt"
	"os"
	"sync"
)

// fileLock serialises read-modify-write cycles over a directory between goroutines (its
// mutex) and processes (an exclusive lock on the file, held through one open file that the
// handle keeps). The kernel drops a dead process's lock.
type fileLock struct {
	path string

	// mu is held while the file lock is; it guards f.
	mu sync.Mutex
	f  *os.File
}

func newLock(path string) *fileLock { return &fileLock{path: path} }

// with runs fn holding the lock.
func (l *fileLock) with(ctx context.Context, fn func() error) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		f, err := os.OpenFile(l.path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return fmt.Errorf("open lock %s: %w", l.path, err)
		}
		l.f = f
	}
	if err := lockFile(ctx, l.f); err != nil {
		return fmt.Errorf("lock %s: %w", l.path, err)
	}
	defer func() { _ = unlockFile(l.f) }()
	return fn()
}

func (l *fileLock) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
