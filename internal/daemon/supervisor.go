package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/keel-dev/keel/internal/procgroup"
)

// Config configures the supervisor.
type Config struct {
	// Home is keel's directory (KEEL_HOME); required.
	Home string
	// Exe is the keel binary that runs jobs (`Exe supervisor run-job ID`); required.
	Exe string
	// Env is the environment of the jobs, built from settings ([Environ]).
	Env []string
	// NATS runs the embedded nats-server for the coordination backend: the keel-nats binary,
	// as a child of the supervisor.
	NATS bool
	// NATSBinary is keel-nats's path; empty finds it beside Exe, beside this executable, then
	// on PATH.
	NATSBinary string
	// Teams, when set, returns the store of the user's teams if it is shared (NATS), given
	// the URL of the embedded nats-server this supervisor runs ("" when none); the
	// supervisor then runs the scheduled jobs those teams keep ([TeamStore]).
	Teams func(embeddedURL string) TeamStore
	// TeamLease is how long a team's scheduled run stays its supervisor's without a renewal
	// before another supervisor takes it over; zero is a minute.
	TeamLease time.Duration
	// Version is keel's, for status.
	Version string
	Logger  *slog.Logger
}

// adoptPoll is how often the supervisor looks whether a job it did not start itself (one it
// adopted after a restart) is still running: it cannot wait for a process it is not the
// parent of, so it checks the job's lock.
const adoptPoll = time.Second

// supervisor is one run of the supervisor.
type supervisor struct {
	cfg    Config
	l      Layout
	store  *store
	logger *slog.Logger
	exited chan string

	// mu guards procs: the job processes this supervisor started and still waits for.
	mu    sync.Mutex
	procs map[string]*exec.Cmd
	wg    sync.WaitGroup
}

// Run is the supervisor: it takes the per-user lock (or returns [ErrRunning]), optionally
// starts the embedded nats-server, adopts the jobs a previous supervisor left, and runs and
// watches jobs until ctx ends. Running jobs are left running when it stops; the next
// supervisor adopts them.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Home == "" || cfg.Exe == "" {
		panic("daemon.Run: Home and Exe are required")
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	l := NewLayout(cfg.Home)
	for _, d := range []string{l.Dir, l.Jobs} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("supervisor directory: %w", err)
		}
	}
	lock, held, err := takeLock(l.Lock)
	if err != nil {
		return err
	}
	if held {
		return ErrRunning
	}
	defer lock.Close()
	st, err := openStore(l)
	if err != nil {
		return err
	}
	defer st.close()
	s := &supervisor{cfg: cfg, l: l, store: st, logger: logger, exited: make(chan string, 16), procs: map[string]*exec.Cmd{}}
	info := Info{PID: os.Getpid(), Started: time.Now(), Version: cfg.Version}
	// A failure of the embedded server that restarting does not cure stops the supervisor, as
	// a first start that fails does.
	runCtx, fail := context.WithCancelCause(ctx)
	defer fail(nil)
	// Once a team used the embedded server, it is served on every start: its clients expect
	// it back after a restart.
	var nats *natsChild
	if _, err := os.Stat(l.NATS); cfg.NATS || err == nil {
		if nats, err = s.startNATS(ctx); err != nil {
			return err
		}
		info.NATSURL, info.NATSPID = nats.url, nats.cmd.Process.Pid
	}
	if err := st.putInfo(ctx, info); err != nil {
		if nats != nil {
			nats.stop()
		}
		return fmt.Errorf("record the supervisor: %w", err)
	}
	if nats != nil {
		kept := make(chan struct{})
		go func() {
			defer close(kept)
			s.keepNATS(runCtx, nats, info, fail)
		}()
		defer func() {
			fail(nil)
			<-kept
		}()
	}
	logger.Info("supervisor started", "pid", info.PID, "nats", info.NATSURL)
	// Scheduled jobs: their runs are jobs of this supervisor; a run left pending by a killed
	// supervisor is picked up by this one's scheduler.
	s.wg.Go(func() { s.runCron(runCtx) })
	if cfg.Teams != nil {
		if ts := cfg.Teams(info.NATSURL); ts != nil {
			s.wg.Go(func() { s.runTeamCron(runCtx, ts) })
		}
	}
	err = s.loop(runCtx)
	s.wg.Wait()
	if ctx.Err() == nil && runCtx.Err() != nil {
		err = context.Cause(runCtx)
		logger.Error("supervisor stopping", "err", err)
	}
	logger.Info("supervisor stopped")
	return err
}

func (s *supervisor) loop(ctx context.Context) error {
	wake, err := s.store.watch(ctx)
	if err != nil {
		return fmt.Errorf("watch jobs: %w", err)
	}
	tick := time.NewTicker(adoptPoll)
	defer tick.Stop()
	for {
		jobs, err := s.store.list(ctx)
		if err != nil {
			s.logger.Warn("list jobs", "err", err)
		}
		for _, j := range jobs {
			if err := s.step(ctx, j); err != nil && ctx.Err() == nil {
				s.logger.Error("job", "agent", j.Agent.ID, "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		case id := <-s.exited:
			s.logger.Info("job process exited", "agent", id)
		case <-tick.C:
		}
	}
}

// step moves job j on by one decision.
func (s *supervisor) step(ctx context.Context, j Job) error {
	id := j.Agent.ID
	switch {
	case j.State.Terminal():
		if !j.Delivered && !locked(s.l.jobLock(id)) {
			// Its process ended between writing the result and queueing it.
			return s.deliver(ctx, j)
		}
		if j.Delivered && time.Since(j.Ended) > 7*24*time.Hour {
			return s.store.remove(ctx, id)
		}
		return nil
	case j.State == StateQueued && j.Stop:
		_, err := s.store.update(ctx, id, func(j *Job) error {
			if j.State != StateQueued {
				return errSkip
			}
			j.State, j.Error, j.Ended = StateKilled, "stopped before it started", time.Now()
			return nil
		})
		return ignoreSkip(err)
	case j.State == StateQueued:
		return s.start(ctx, j)
	case j.State == StateRunning:
		if s.started(id) {
			if j.Stop && j.PID > 0 {
				_ = procgroup.Terminate(j.PID)
			}
			return nil
		}
		if locked(s.l.jobLock(id)) {
			// Adopted: its process outlived the supervisor that started it.
			if j.Stop && j.PID > 0 {
				_ = procgroup.Terminate(j.PID)
			}
			return nil
		}
		return s.died(ctx, j)
	}
	return nil
}

func ignoreSkip(err error) error {
	if errors.Is(err, errSkip) {
		return nil
	}
	return err
}

func (s *supervisor) started(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.procs[id]
	return ok
}

// start marks job j running and starts its process.
func (s *supervisor) start(ctx context.Context, j Job) error {
	id := j.Agent.ID
	j, err := s.store.update(ctx, id, func(j *Job) error {
		if j.State != StateQueued {
			return errSkip
		}
		j.State, j.Started = StateRunning, time.Now()
		j.Attempts++
		return nil
	})
	if err != nil {
		return ignoreSkip(err)
	}
	out, err := os.OpenFile(s.l.JobLog(id), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open the log of %s: %w", describe(j), err)
	}
	cmd := exec.Command(s.cfg.Exe, "supervisor", "run-job", id)
	cmd.Env = s.cfg.Env
	cmd.Dir = j.Launch.Cwd
	if _, err := os.Stat(cmd.Dir); err != nil {
		cmd.Dir = ""
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = detachAttr()
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		_, uerr := s.store.update(ctx, id, func(j *Job) error {
			j.State, j.Error, j.Ended = StateFailed, fmt.Sprintf("start its process: %v", err), time.Now()
			return nil
		})
		return errors.Join(fmt.Errorf("start %s: %w", describe(j), err), uerr)
	}
	s.logger.Info("job started", "agent", id, "pid", cmd.Process.Pid, "attempt", j.Attempts)
	s.mu.Lock()
	s.procs[id] = cmd
	s.mu.Unlock()
	s.wg.Go(func() {
		_ = cmd.Wait()
		_ = out.Close()
		s.mu.Lock()
		delete(s.procs, id)
		s.mu.Unlock()
		s.exited <- id
	})
	return nil
}

// died handles a running job whose process is gone without a result: it is started again
// (continuing its transcript) or, after MaxAttempts, reported failed.
func (s *supervisor) died(ctx context.Context, j Job) error {
	id := j.Agent.ID
	j, err := s.store.update(ctx, id, func(j *Job) error {
		if j.State != StateRunning {
			return errSkip
		}
		switch {
		case j.Stop:
			j.State, j.Error, j.Ended = StateKilled, "stopped", time.Now()
		case j.Attempts >= MaxAttempts:
			j.State, j.Ended = StateFailed, time.Now()
			j.Error = fmt.Sprintf("its process died %d times; see %s", j.Attempts, s.l.JobLog(id))
		default:
			j.State = StateQueued
		}
		return nil
	})
	if err != nil {
		return ignoreSkip(err)
	}
	s.logger.Warn("job process died", "agent", id, "attempts", j.Attempts, "now", j.State)
	if j.State.Terminal() {
		return s.deliver(ctx, j)
	}
	return nil
}

func (s *supervisor) deliver(ctx context.Context, j Job) error {
	if err := deliver(j); err != nil {
		return err
	}
	_, err := s.store.update(ctx, j.Agent.ID, func(j *Job) error {
		if j.Delivered {
			return errSkip
		}
		j.Delivered = true
		return nil
	})
	s.logger.Info("result delivered", "agent", j.Agent.ID, "state", j.State)
	return ignoreSkip(err)
}
