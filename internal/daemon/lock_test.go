package daemon

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/keel-dev/keel/internal/waittest"
)

// A supervisor that starts while a probe (locked) holds the lock for an instant must become
// the holder, not take the probe for a running supervisor: takeLock waits out a holder that
// lets go.
func TestTakeLockOutlastsAProbe(t *testing.T) {
	path := filepath.Join(t.TempDir(), "supervisor.lock")
	probe, held, err := tryLock(path)
	if err != nil || held {
		t.Fatalf("tryLock = %v, %v", held, err)
	}
	busy := make(chan struct{})
	var once sync.Once
	onLockBusy = func() { once.Do(func() { close(busy) }) }
	t.Cleanup(func() { onLockBusy = func() {} })
	type result struct {
		held bool
		err  error
	}
	done := make(chan result, 1)
	go func() {
		f, held, err := takeLock(path)
		if f != nil {
			defer f.Close()
		}
		done <- result{held, err}
	}()
	waittest.Recv(t, "takeLock finding the probe's lock", busy)
	probe.Close() // the probe lets go, as locked does at once
	if r := waittest.Recv(t, "takeLock", done); r.err != nil || r.held {
		t.Fatalf("takeLock = held %v, err %v; want the lock once the probe let go", r.held, r.err)
	}
}

// A lock that a running holder keeps stays held for takeLock and for locked.
func TestTakeLockRespectsAHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "supervisor.lock")
	holder, held, err := tryLock(path)
	if err != nil || held {
		t.Fatalf("tryLock = %v, %v", held, err)
	}
	defer holder.Close()
	if !locked(path) {
		t.Error("locked = false while a holder keeps the lock")
	}
	if f, held, err := takeLock(path); err != nil || !held {
		if f != nil {
			f.Close()
		}
		t.Fatalf("takeLock = held %v, err %v; want held", held, err)
	}
	holder.Close()
	if locked(path) {
		t.Error("locked = true after the holder let go")
	}
}
