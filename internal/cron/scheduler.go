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
	// Report delivers a run's outcome to the session that made the job; nil is [Deliver]
	// (its notification queue on this machine). A team's jobs, which any machine's
	// supervisor may run, report through the team's mailbox instead. It must be idempotent
	// per run id: a run whose finish was not recorded is reported again.
	Report func(ctx context.Context, j Job, r Run, text string, runErr error) error
	// Lease, when set, makes the scheduler one of several that share the records at once
	// (a team's, which every machine's supervisor schedules): a run it claims is its own
	// ([Run.Owner]) and renewed every third of Lease while it goes, and it takes over
	// another's pending run only once Lease has passed without a renewal (that scheduler
	// died). Zero suits records one scheduler runs at a time (the supervisor's own, under its
	// lock): a pending run is a dead scheduler's, taken over at once.
	Lease  time.Duration
	Logger *slog.Logger
}

// Scheduler claims due ticks and runs them: the supervisor's side. One per store is enough,
// but several are safe (a tick is claimed once).
type Scheduler struct {
	cfg SchedulerConfig
	// id names this scheduler as the owner of its runs when it has a lease.
	id       string
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
	if cfg.Report == nil {
		cfg.Report = func(_ context.Context, j Job, r Run, text string, runErr error) error {
			return Deliver(j, r, text, runErr)
		}
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var id string
	if cfg.Lease > 0 {
		id = "scheduler-" + newID() + newID()
	}
	return &Scheduler{cfg: cfg, id: id, logger: logger, finished: coord.Signal(), running: map[string]bool{}, retry: map[string]time.Time{}}
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
			earliest(s.pending(ctx, j, now))
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
		run, ok, err := s.cfg.Store.ClaimFor(ctx, j.ID, s.id, now)
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

// pending handles job j's pending run: this scheduler's own, or one it may take over, is
// dispatched; another live scheduler's is left to it, and the time its lease would pass is
// returned, when this scheduler looks again.
func (s *Scheduler) pending(ctx context.Context, j Job, now time.Time) time.Time {
	r := *j.Pending
	if s.cfg.Lease <= 0 || r.Owner == s.id {
		return s.dispatch(ctx, j, r, now)
	}
	if expiry := r.Renewed.Add(s.cfg.Lease); now.Before(expiry) {
		return expiry
	}
	r, ok, err := s.cfg.Store.TakeOver(ctx, j.ID, s.id, now, s.cfg.Lease)
	if err != nil {
		s.logger.Warn("take over a scheduled run", "job", j.ID, "err", err)
		return time.Time{}
	}
	if !ok {
		return time.Time{} // another scheduler took it, or it ended: the watch wakes us
	}
	s.logger.Warn("took over the run of a scheduler that stopped renewing it", "job", j.ID, "run", r.ID, "owner", j.Pending.Owner)
	return s.dispatch(ctx, j, r, now)
}

// renew renews run r's lease while ctx lasts (the run goes).
func (s *Scheduler) renew(ctx context.Context, logger *slog.Logger, r Run) {
	t := time.NewTicker(s.cfg.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ok, err := s.cfg.Store.Renew(ctx, r, s.id, time.Now())
		if err != nil {
			logger.Warn("renew a scheduled run", "err", err)
			continue
		}
		if !ok {
			return // finished, deleted, or taken over by a scheduler that saw no renewal
		}
	}
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
		if s.cfg.Lease > 0 {
			renewing, stop := context.WithCancel(ctx)
			var renewed sync.WaitGroup
			renewed.Go(func() { s.renew(renewing, logger, r) })
			defer renewed.Wait()
			defer stop()
		}
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
	if err := s.cfg.Report(ctx, j, r, text, runErr); err != nil {
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
