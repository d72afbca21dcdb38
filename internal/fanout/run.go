package fanout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/keel-dev/keel/internal/coord"
)

// ItemRunner runs one item's agent and returns its final text. It calls warm once the
// agent's first request has been answered — the prefix the items share is then in the
// prompt cache — and may call it again; a run that never does releases the other items when
// it returns. It should return when ctx ends.
type ItemRunner func(ctx context.Context, it Item, warm func()) (string, error)

// DefaultLease is how long a worker's claim on an item lasts without renewal; the worker
// renews it at a third of that while the item runs.
const DefaultLease = 2 * time.Minute

// Config configures [Run].
type Config struct {
	// Board is the fan-out's ledger, planned with [Plan]; required.
	Board coord.Board
	// Owner names who runs the fan-out (the session): 1–56 letters, digits, _ and -; required.
	// Its workers claim as Owner-w0, Owner-w1…
	Owner string
	// Concurrency caps the items running at once; zero is [DefaultConcurrency].
	Concurrency int
	// Lease is a claim's lease; zero is [DefaultLease].
	Lease time.Duration
	// NoStagger starts every worker at once instead of the first alone until its item warmed
	// the cache.
	NoStagger bool
	Logger    *slog.Logger
}

// Run runs every item not finished yet, at most Concurrency at once, and returns the summary
// of all items. When ctx ends it stops, giving back the items it was running, and the
// summary counts them as not finished; a later Run by the same owner resumes. An item's
// failure is its result, not Run's error; Run's error is a ledger that could not be read or
// written.
func Run(ctx context.Context, cfg Config, run ItemRunner) (Summary, error) {
	if cfg.Board == nil || run == nil {
		panic("fanout.Run: Board and an ItemRunner are required")
	}
	if err := coord.CheckName(cfg.Owner + "-w00000"); err != nil {
		return Summary{}, fmt.Errorf("run a fan-out: owner %q: %w", cfg.Owner, err)
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	f := &fan{cfg: cfg, run: run, logger: orDiscard(cfg.Logger).With("fanout", cfg.Owner), warmed: make(chan struct{})}
	start := time.Now()
	if err := f.takeBack(ctx); err != nil {
		return Summary{}, err
	}
	if cfg.NoStagger {
		f.warm()
	}
	var wg sync.WaitGroup
	for k := range cfg.Concurrency {
		wg.Go(func() { f.worker(ctx, k) })
	}
	wg.Wait()
	items, err := Items(context.WithoutCancel(ctx), cfg.Board)
	if err != nil {
		return Summary{}, errors.Join(f.err(), err)
	}
	return summarize(items, time.Since(start)), f.err()
}

type fan struct {
	cfg      Config
	run      ItemRunner
	logger   *slog.Logger
	warmed   chan struct{}
	warmOnce sync.Once

	// mu guards errs: the ledger's failures.
	mu   sync.Mutex
	errs []error
}

func (f *fan) warm() { f.warmOnce.Do(func() { close(f.warmed) }) }

func (f *fan) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, err)
}

func (f *fan) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return errors.Join(f.errs...)
}

func (f *fan) workerName(k int) string { return fmt.Sprintf("%s-w%d", f.cfg.Owner, k) }

// takeBack releases the items an earlier run of this owner held when it died.
func (f *fan) takeBack(ctx context.Context) error {
	ts, err := f.cfg.Board.List(ctx)
	if err != nil {
		return fmt.Errorf("run a fan-out: %w", err)
	}
	for _, t := range ts {
		if t.Status == coord.StatusInProgress && strings.HasPrefix(t.Owner, f.cfg.Owner+"-w") {
			if _, err := f.cfg.Board.Release(ctx, t.ID, t.Owner); err != nil && !errors.Is(err, coord.ErrNotOwner) {
				return fmt.Errorf("resume item %s: %w", t.ID, err)
			}
			f.logger.Info("fan-out item taken back", "item", t.ID, "from", t.Owner)
		}
	}
	return nil
}

// worker runs items until none is left; all but the first wait until the cache is warm.
func (f *fan) worker(ctx context.Context, k int) {
	if k > 0 {
		select {
		case <-f.warmed:
		case <-ctx.Done():
			return
		}
	}
	name := f.workerName(k)
	for ctx.Err() == nil {
		t, err := f.cfg.Board.ClaimNext(ctx, name, f.cfg.Lease)
		if errors.Is(err, coord.ErrNoTask) {
			f.warm() // nothing left to warm for
			return
		}
		if err != nil {
			if ctx.Err() == nil {
				f.fail(fmt.Errorf("claim a fan-out item: %w", err))
			}
			f.warm()
			return
		}
		if err := f.item(ctx, t, name); err != nil {
			f.fail(err)
			f.warm()
			return
		}
	}
}

// item runs one claimed item and records its result.
func (f *fan) item(ctx context.Context, t coord.Task, name string) error {
	it := itemOf(t)
	it.Attempts++
	attempts, _ := json.Marshal(it.Attempts)
	if _, err := f.cfg.Board.Update(ctx, t.ID, coord.TaskChange{Metadata: map[string]json.RawMessage{metaAttempts: attempts}, IfOwner: &name}); err != nil {
		if ctx.Err() != nil {
			return f.giveBack(t.ID, name)
		}
		return fmt.Errorf("start fan-out item %s: %w", t.ID, err)
	}
	runCtx, stop := context.WithCancel(ctx)
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		f.renew(runCtx, t.ID, name)
	}()
	text, runErr := f.run(runCtx, it, f.warm)
	stop()
	<-renewed
	f.warm()
	if runErr != nil && ctx.Err() != nil {
		return f.giveBack(t.ID, name) // cut off by the stop: not a failure of the item
	}
	// An item that finished as the fan-out was stopped is recorded: its work is not lost and
	// not done again when the fan-out resumes.
	wctx := context.WithoutCancel(ctx)
	meta := map[string]json.RawMessage{}
	if runErr != nil {
		meta[metaError], _ = json.Marshal(runErr.Error())
	} else {
		meta[metaResult], _ = json.Marshal(text)
	}
	done := coord.StatusCompleted
	_, err := f.cfg.Board.Update(wctx, t.ID, coord.TaskChange{Status: &done, Metadata: meta, IfOwner: &name})
	if errors.Is(err, coord.ErrNotOwner) {
		f.logger.Warn("fan-out item's lease lapsed while it ran; another runner has it", "item", t.ID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("record fan-out item %s: %w", t.ID, err)
	}
	return nil
}

// giveBack releases an item interrupted before it finished, so that any runner may take it.
// It runs after the fan-out's context ended, and so without it.
func (f *fan) giveBack(id, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := f.cfg.Board.Release(ctx, id, name); err != nil && !errors.Is(err, coord.ErrNotOwner) {
		return fmt.Errorf("give back fan-out item %s: %w", id, err)
	}
	return nil
}

// renew keeps the claim on item id alive until ctx ends.
func (f *fan) renew(ctx context.Context, id, name string) {
	tick := time.NewTicker(f.cfg.Lease / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if _, err := f.cfg.Board.Renew(ctx, id, name, f.cfg.Lease); err != nil && ctx.Err() == nil {
				f.logger.Warn("renew fan-out item", "item", id, "err", err)
			}
		}
	}
}
