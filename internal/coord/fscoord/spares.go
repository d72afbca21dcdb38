package fscoord

import (
	"log/slog"
	"os"
	"sync"
)

// spares hands out unnamed files for messages, each made before it is needed. Creating an
// inode is most of what a send costs — on a busy disk it waits for the filesystem's journal,
// up to milliseconds — so a handle makes the next file between sends, off the path a message
// travels. Unnamed files (O_TMPFILE) vanish when closed, so a spare never outlives its handle,
// even through a crash. Where the filesystem cannot make them, take returns nil and senders
// use named temporary files.
type spares struct {
	dir    string
	logger *slog.Logger
	// next is the spare made ahead; want asks the maker for another.
	next chan *os.File
	want chan struct{}

	// mu guards started, off and closed.
	mu      sync.Mutex
	started bool
	off     bool
	closed  bool
	wg      sync.WaitGroup
	done    chan struct{}
}

func newSpares(dir string, logger *slog.Logger) *spares {
	return &spares{dir: dir, logger: logger, next: make(chan *os.File, 1), want: make(chan struct{}, 1), done: make(chan struct{})}
}

// take returns an unnamed file in dir to write a message into (the caller closes it), or nil
// where there are none.
func (s *spares) take() *os.File {
	s.mu.Lock()
	if s.off || s.closed {
		s.mu.Unlock()
		return nil
	}
	if !s.started {
		s.started = true
		s.wg.Go(s.make)
	}
	s.mu.Unlock()
	var f *os.File
	select {
	case f = <-s.next:
	default:
		var ok bool
		if f, ok = openUnnamed(s.dir); !ok {
			s.disable(nil)
			return nil
		}
	}
	select {
	case s.want <- struct{}{}:
	default:
	}
	return f
}

// make keeps one spare ready.
func (s *spares) make() {
	for {
		select {
		case <-s.done:
			return
		case <-s.want:
		}
		f, ok := openUnnamed(s.dir)
		if !ok {
			return // take finds none and makes its own, or learns there are none
		}
		select {
		case s.next <- f:
		default:
			f.Close() // one is ready already
		}
	}
}

// disable turns spares off for the handle (err says why, if known).
func (s *spares) disable(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.off && err != nil {
		s.logger.Debug("messages use named temporary files", "err", err)
	}
	s.off = true
}

func (s *spares) close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	close(s.done)
	s.wg.Wait()
	select {
	case f := <-s.next:
		f.Close()
	default:
	}
}
