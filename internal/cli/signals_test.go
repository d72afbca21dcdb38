package cli

import (
	"bytes"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/keel-dev/keel/internal/waittest"
)

// lockedBuffer is a buffer written from the signal goroutine and read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestStopSignalHasAGrace: a run that does not end after a stop signal (something it waits on
// cannot be cancelled) is ended by keel itself once stopGrace passes, with the signal's
// status and a line saying why — a single SIGTERM stops keel whatever hangs.
func TestStopSignalHasAGrace(t *testing.T) {
	exited := make(chan int, 1)
	savedGrace, savedExit := stopGrace, exitNow
	stopGrace, exitNow = 0, func(code int) { exited <- code }
	t.Cleanup(func() { stopGrace, exitNow = savedGrace, savedExit })
	var errw lockedBuffer
	ctx, stop := signalContext(&errw)
	defer stop()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-ctx.Done()
	if code := waittest.Recv(t, "keel to exit past the grace", exited); code != 143 {
		t.Errorf("exit status %d, want 143", code)
	}
	if !strings.Contains(errw.String(), "stopped by SIGTERM, but the run did not end within") {
		t.Errorf("stderr = %q", errw.String())
	}
}
