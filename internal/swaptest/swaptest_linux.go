package swaptest

import (
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// maxSwaps bounds the loop, which the test's stop ends long before.
const maxSwaps = 100_000_000

// Start exchanges the names a and b once, then keeps exchanging them in a goroutine until the
// returned stop is called (stop waits for it; calling it again does nothing). The test is
// skipped where the file system cannot exchange names.
func Start(t testing.TB, a, b string) (stop func()) {
	t.Helper()
	if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
		t.Skipf("renameat2 RENAME_EXCHANGE: %v", err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for range maxSwaps {
			select {
			case <-done:
				return
			default:
			}
			_ = unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
		}
	})
	stop = sync.OnceFunc(func() { close(done); wg.Wait() })
	t.Cleanup(stop)
	return stop
}
