package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// stopSignals end a run the same way, whichever arrives: a closed terminal or a lost ssh
// connection (SIGHUP), Ctrl-C (SIGINT), a supervisor or container stop (SIGTERM), Ctrl-\
// (SIGQUIT). The run's context is cancelled, so running tools' process groups are killed,
// the transcript is synced and a result line is written; the exit status is then 128 + the
// signal's number, as a shell reports a process the signal killed.
var stopSignals = []os.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT}

// signalStop is the cause of a run's cancellation by a signal.
type signalStop struct{ sig syscall.Signal }

func (e *signalStop) Error() string { return fmt.Sprintf("stopped by %s", signalName(e.sig)) }

// stopGrace is how long a run has, after a stop signal, to end in order. Something that
// cannot be cancelled (a read the kernel holds, a child that will not die) would otherwise
// keep keel running past SIGTERM for ever, and neither a supervisor's stop nor the Agent SDK's
// would stop it. Past it keel exits with the signal's status, leaving its transcript as a
// crash would (at most a torn last line, which resume repairs). exitNow is os.Exit but in tests.
var (
	stopGrace = 10 * time.Second
	exitNow   = os.Exit
)

// signalContext returns a context cancelled, with a [*signalStop] cause, by the first of
// stopSignals. After the first, the signals get their default action back: a second Ctrl-C
// ends keel at once when the orderly end is not wanted; and when the run has not ended
// within stopGrace, keel says so on errw and exits. stop releases the signals.
func signalContext(errw io.Writer) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, stopSignals...)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			signal.Reset(stopSignals...)
			sig, _ := s.(syscall.Signal)
			cancel(&signalStop{sig: sig})
			grace := time.NewTimer(stopGrace)
			defer grace.Stop()
			select {
			case <-grace.C:
				fmt.Fprintf(errw, "keel: stopped by %s, but the run did not end within %s of it; exiting\n", signalName(sig), stopGrace)
				exitNow(128 + int(sig))
			case <-done:
			}
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// signalExit returns the exit status for a run ended by a signal (128 + its number), or
// false when no signal ended it.
func signalExit(ctx context.Context) (int, *signalStop, bool) {
	var s *signalStop
	if !errors.As(context.Cause(ctx), &s) {
		return 0, nil, false
	}
	return 128 + int(s.sig), s, true
}

func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	}
	return sig.String()
}
