package fscoord

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/keel-dev/keel/internal/coord"
)

// hub multiplexes one handle's watches onto one fsnotify watcher (or one polling loop):
// subscribers name directories and a filter on file names, and get a coalesced signal when
// a matching entry appears, changes or goes.
type hub struct {
	logger *slog.Logger
	poll   time.Duration
	done   chan struct{}
	wg     sync.WaitGroup

	// mu guards w, subs, fingerprints and closed.
	mu     sync.Mutex
	w      *fsnotify.Watcher
	subs   map[string]map[*sub]struct{} // by directory
	prints map[string]string            // polling: each directory's last listing
	closed bool
}

type sub struct {
	ch     chan struct{}
	filter func(name string) bool
	dirs   []string
}

func newHub(logger *slog.Logger, poll time.Duration) *hub {
	h := &hub{logger: logger, poll: poll, done: make(chan struct{}), subs: map[string]map[*sub]struct{}{}, prints: map[string]string{}}
	if poll <= 0 {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			logger.Warn("coordination watches fall back to polling", "err", err)
			h.poll = DefaultPollInterval
		} else {
			h.w = w
			h.wg.Go(h.events)
		}
	}
	if h.poll > 0 {
		h.wg.Go(h.polling)
	}
	return h
}

// watch subscribes to changes in dirs of entries whose name passes filter (nil: all but
// temporary files). The channel closes when ctx ends or the hub closes.
func (h *hub) watch(ctx context.Context, filter func(string) bool, dirs ...string) (<-chan struct{}, error) {
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("watch %s: %w", d, err)
		}
	}
	s := &sub{ch: coord.Signal(), filter: filter, dirs: dirs}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, fmt.Errorf("watch: %w", coord.ErrClosed)
	}
	for _, d := range dirs {
		if h.subs[d] == nil {
			if h.w != nil {
				if err := h.w.Add(d); err != nil {
					h.mu.Unlock()
					return nil, fmt.Errorf("watch %s: %w", d, err)
				}
			} else {
				h.prints[d] = fingerprint(d)
			}
			h.subs[d] = map[*sub]struct{}{}
		}
		h.subs[d][s] = struct{}{}
	}
	h.mu.Unlock()
	h.wg.Go(func() {
		select {
		case <-ctx.Done():
		case <-h.done:
		}
		h.unsubscribe(s)
	})
	return s.ch, nil
}

func (h *hub) unsubscribe(s *sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, d := range s.dirs {
		delete(h.subs[d], s)
		if len(h.subs[d]) == 0 {
			delete(h.subs, d)
			delete(h.prints, d)
			if h.w != nil && !h.closed {
				_ = h.w.Remove(d)
			}
		}
	}
	// Signals are sent under mu, so none can follow the close.
	close(s.ch)
}

// notify signals the subscribers of dir whose filter passes name ("" passes every filter).
func (h *hub) notify(dir, name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs[dir] {
		if name == "" || (!temporary(name) && (s.filter == nil || s.filter(name))) {
			coord.Notify(s.ch)
		}
	}
}

func (h *hub) notifyAll() {
	h.mu.Lock()
	dirs := make([]string, 0, len(h.subs))
	for d := range h.subs {
		dirs = append(dirs, d)
	}
	h.mu.Unlock()
	for _, d := range dirs {
		h.notify(d, "")
	}
}

func temporary(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".tmp")
}

func (h *hub) events() {
	for {
		select {
		case ev, ok := <-h.w.Events:
			if !ok {
				return
			}
			h.notify(filepath.Dir(ev.Name), filepath.Base(ev.Name))
		case err, ok := <-h.w.Errors:
			if !ok {
				return
			}
			// An overflow lost events: everyone looks again.
			h.logger.Warn("coordination watch error", "err", err)
			h.notifyAll()
		}
	}
}

func (h *hub) polling() {
	tick := time.NewTicker(h.poll)
	defer tick.Stop()
	for {
		select {
		case <-h.done:
			return
		case <-tick.C:
		}
		h.mu.Lock()
		dirs := make([]string, 0, len(h.prints))
		for d := range h.prints {
			dirs = append(dirs, d)
		}
		h.mu.Unlock()
		for _, d := range dirs {
			fp := fingerprint(d)
			h.mu.Lock()
			old, watched := h.prints[d]
			if watched {
				h.prints[d] = fp
			}
			h.mu.Unlock()
			if watched && old != fp {
				h.notify(d, "")
			}
		}
	}
}

// fingerprint summarises a directory listing: names, sizes and modification times.
func fingerprint(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	for _, e := range entries {
		if temporary(e.Name()) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "%s %d %d\n", e.Name(), info.Size(), info.ModTime().UnixNano())
	}
	return b.String()
}

func (h *hub) close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	h.mu.Unlock()
	close(h.done)
	if h.w != nil {
		_ = h.w.Close()
	}
	h.wg.Wait()
}
