package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"
)

// hub builds the view when the records may have changed — a team's watch fired, or the
// interval passed (transcripts and job records have no watch here) — and hands the newest
// encoded view to every open event stream. Streams get the newest view, never a backlog.
type hub struct {
	c        *collector
	interval time.Duration
	logger   *slog.Logger

	// mu guards current, seq and changed.
	mu      sync.Mutex
	current []byte
	seq     uint64
	changed chan struct{}
	ready   chan struct{}
	once    sync.Once
}

func newHub(c *collector, interval time.Duration, logger *slog.Logger) *hub {
	return &hub{c: c, interval: interval, logger: logger, changed: make(chan struct{}), ready: make(chan struct{})}
}

// run refreshes the view until ctx is done.
func (h *hub) run(ctx context.Context) {
	tick := time.NewTicker(h.interval)
	defer tick.Stop()
	wake := make(chan struct{}, 1)
	var watching sync.WaitGroup
	defer watching.Wait()
	watched := 0
	stopWatching := func() {}
	defer func() { stopWatching() }()
	for {
		h.refresh(ctx)
		// Teams opened since the last look get their watches.
		if n := h.teamCount(); n != watched {
			watched = n
			stopWatching()
			wctx, cancel := context.WithCancel(ctx)
			stopWatching = cancel
			for _, ch := range h.c.watches(wctx) {
				watching.Go(func() {
					for {
						select {
						case <-wctx.Done():
							return
						case _, ok := <-ch:
							if !ok {
								return
							}
							select {
							case wake <- struct{}{}:
							default:
							}
						}
					}
				})
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-wake:
		}
	}
}

func (h *hub) teamCount() int {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	return len(h.c.teams)
}

func (h *hub) refresh(ctx context.Context) {
	v := h.c.collect(ctx)
	if ctx.Err() != nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		h.logger.Warn("dashboard: encode view", "err", err)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if bytes.Equal(b, h.current) {
		return
	}
	h.current = b
	h.seq++
	close(h.changed)
	h.changed = make(chan struct{})
	h.once.Do(func() { close(h.ready) })
}

// latest returns the newest view, its number, and a channel closed when a newer one exists.
func (h *hub) latest(ctx context.Context) ([]byte, uint64, <-chan struct{}) {
	select {
	case <-h.ready:
	case <-ctx.Done():
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.current, h.seq, h.changed
}

func (h *hub) close() { h.c.close() }
