package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/keel-dev/keel/internal/subagent"
)

// AgentRunner runs one detached agent: a session opened for the job ([session.Session] with
// DetachedFrom).
type AgentRunner interface {
	RunDetached(ctx context.Context, a subagent.DetachedAgent) (string, error)
	Close() error
}

// OpenFunc opens the session that runs job j; the CLI builds it from j.Launch.
type OpenFunc func(ctx context.Context, j Job) (AgentRunner, error)

// ErrStopped is the cause of a job stopped on request.
var ErrStopped = errors.New("stopped on request")

// RunJob runs job id in this process: the supervisor starts one process per job. It holds the
// job's lock while it runs, writes the outcome into the job's record, queues the task
// notification for the session, and marks it delivered. A job that another process runs, or
// that has ended, is left alone.
func RunJob(ctx context.Context, home, id string, open OpenFunc, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	l := NewLayout(home)
	if err := os.MkdirAll(l.Jobs, 0o700); err != nil {
		return fmt.Errorf("run job %s: %w", id, err)
	}
	lock, held, err := takeLock(l.jobLock(id))
	if err != nil {
		return err
	}
	if held {
		logger.Info("job runs in another process", "agent", id)
		return nil
	}
	defer lock.Close()
	st, err := openStore(l)
	if err != nil {
		return err
	}
	defer st.close()
	j, err := st.update(ctx, id, func(j *Job) error {
		if j.State != StateRunning {
			return errSkip
		}
		j.PID = os.Getpid()
		return nil
	})
	if errors.Is(err, errSkip) {
		if j.State.Terminal() && !j.Delivered {
			return deliverAndMark(ctx, st, j)
		}
		return nil
	}
	if err != nil {
		return err
	}

	logger.Info("job starting", "agent", id, "attempt", j.Attempts)
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go watchStop(runCtx, st, id, cancel)

	text, runErr := run(runCtx, j, open)
	state, errText := StateCompleted, ""
	switch {
	case errors.Is(context.Cause(runCtx), ErrStopped), ctx.Err() != nil:
		state, errText = StateKilled, "stopped"
	case runErr != nil:
		state, errText = StateFailed, runErr.Error()
	}
	// The outcome is recorded even when ctx has ended (a SIGTERM): it must not be lost.
	wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer wcancel()
	j, err = st.update(wctx, id, func(j *Job) error {
		j.State, j.Result, j.Error, j.Ended = state, text, errText, time.Now()
		return nil
	})
	if err != nil {
		return err
	}
	logger.Info("job ended", "agent", id, "state", state)
	return deliverAndMark(wctx, st, j)
}

func run(ctx context.Context, j Job, open OpenFunc) (string, error) {
	r, err := open(ctx, j)
	if err != nil {
		return "", fmt.Errorf("open the session of %s: %w", describe(j), err)
	}
	defer r.Close()
	return r.RunDetached(ctx, j.Agent)
}

// watchStop cancels the run when the job's record asks for a stop.
func watchStop(ctx context.Context, st *store, id string, cancel context.CancelCauseFunc) {
	wake, err := st.watch(ctx)
	if err != nil {
		return
	}
	for {
		if j, _, err := st.get(ctx, id); err == nil && j.Stop {
			cancel(ErrStopped)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
		}
	}
}

func deliverAndMark(ctx context.Context, st *store, j Job) error {
	if err := deliver(j); err != nil {
		return err
	}
	_, err := st.update(ctx, j.Agent.ID, func(j *Job) error {
		j.Delivered = true
		return nil
	})
	return err
}
