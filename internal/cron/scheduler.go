package cron

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/keel-dev/keel/internal/coord"
)

// Runner runs a job's prompt as a session and returns the session's final text. The
// supervisor implements it (a job process of its own, opened from the job's Origin.Launch),
// so a run outlives the scheduler's process.
//
// RunJob must be idempotent per run id: a scheduler that died left the run pending, and the
// next one calls RunJob again for the same [Run.ID] — the runner then attaches to the run it
// started before (or returns the result it recorded) instead of starting another. When ctx
// ends, RunJob returns without ending a run that lives in another process.
type Runner interface {
	RunJob(ctx context.Context, j Job, r Run) (string, error)
}

// SchedulerConfig configures a [Scheduler].
type SchedulerConfig struct {
	Store  *Store
	Runner Runner
	// RetryDelay is how long a run whose report could not be written waits before it is
	// tried again; zero is a minute.
	RetryDelay time.Duration
	Logger     *slog.Logger
}

// Scheduler claims due ticks and runs them: the supervisor's side. One per store is enough,
// but several are safe (a tick is claimed once).
type Scheduler struct {
	cfg      SchedulerConfig
	logger   *slog.Logger
	finished chan struct{}
	wg       sync.WaitGroup

	// mu guards running and retry: the runs this scheduler is running, and when a run whose
	// report failed may be tried again.
	mu      sync.Mutex
	running map[string]bool
	retry   map[string]time.Time
}

// NewScheduler returns a scheduler; Store and Runner are required.
func NewScheduler(cfg SchedulerConfig) *Scheduler {
	if cfg.Store == nil || cfg.Runner == nil {
		panic("cron.NewScheduler: Store and Runner are required")
	}
	if cfg.RetryDelay <= 0 {
		cfg.RetryDelay = time.Minute
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Scheduler{cfg: cfg, logger: logger, finished: coord.Signal(), running: map[string]bool{}, retry: map[string]time.Time{}}
}

// Run ticks until ctx ends: at each job's next fire time, when the jobs change, and when a run
// ends. It returns once the runs it started have returned; runs not reported by then stay
// pending for the next scheduler.
func (s *Scheduler) Run(ctx context.Context) error {
	wake, err := s.cfg.Store.Watch(ctx)
	if err != nil {
		return fmt.Errorf("watch scheduled jobs: %w", err)
	}
	defer s.wg.Wait()
	for {
		next := s.Tick(ctx, time.Now())
		var fire <-chan time.Time
		var timer *time.Timer
		if !next.IsZero() {
			timer = time.NewTimer(time.Until(next))
			fire = timer.C
		}
		select {
		case <-ctx.Done():
		case <-wake:
		case <-s.finished:
		case <-fire:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// Tick claims and starts what is due at now, resumes runs a previous scheduler left pending,
// and returns the earliest time something will be due (zero: nothing is scheduled).
func (s *Scheduler) Tick(ctx context.Context, now time.Time) time.Time {
	jobs, err := s.cfg.Store.List(ctx)
	if err != nil {
		s.logger.Warn("list scheduled jobs", "err", err)
	}
	var next time.Time
	earliest := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, j := range jobs {
		if j.Pending != nil {
			earliest(s.dispatch(ctx, j, *j.Pending, now))
			continue
		}
		sched, err := j.Schedule()
		if err != nil {
			s.logger.Warn("scheduled job", "job", j.ID, "err", err)
			continue
		}
		from := j.LastTick
		if from.IsZero() {
			from = j.Created
		}
		n := sched.Next(from)
		if n.IsZero() || n.After(now) {
			earliest(n)
			continue
		}
		run, ok, err := s.cfg.Store.Claim(ctx, j.ID, now)
		if err != nil {
			s.logger.Warn("claim scheduled job", "job", j.ID, "err", err)
			continue
		}
		if ok {
			earliest(s.dispatch(ctx, j, run, now))
		}
	}
	return next
}

// dispatch starts run r of job j unless this scheduler runs it already or waits to retry it;
// it returns the time of that retry, if any.
func (s *Scheduler) dispatch(ctx context.Context, j Job, r Run, now time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running[r.ID] {
		return time.Time{}
	}
	if at, ok := s.retry[r.ID]; ok && now.Before(at) {
		return at
	}
	delete(s.retry, r.ID)
	s.running[r.ID] = true
	logger := s.logger.With("job", j.ID, "run", r.ID)
	logger.Info("scheduled run starting", "tick", r.Tick, "missed", r.Missed)
	s.wg.Go(func() {
		defer coord.Notify(s.finished)
		text, runErr := s.cfg.Runner.RunJob(ctx, j, r)
		reported := ctx.Err() == nil && s.report(ctx, logger, j, r, text, runErr)
		s.mu.Lock()
		delete(s.running, r.ID)
		if !reported && ctx.Err() == nil {
			s.retry[r.ID] = time.Now().Add(s.cfg.RetryDelay)
		}
		s.mu.Unlock()
	})
	return time.Time{}
}

// report delivers the run's outcome to its session and finishes the run.
func (s *Scheduler) report(ctx context.Context, logger *slog.Logger, j Job, r Run, text string, runErr error) bool {
	if err := Deliver(j, r, text, runErr); err != nil {
		logger.Error("deliver scheduled run", "err", err)
		return false
	}
	if err := s.cfg.Store.Finish(ctx, r); err != nil {
		logger.Error("finish scheduled run", "err", err)
		return false
	}
	logger.Info("scheduled run reported", "failed", runErr != nil)
	return true
}
