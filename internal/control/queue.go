package control

import (
	"context"
	"sync"
)

// queue is an unbounded FIFO: a burst of stdin lines never blocks the reader, which must stay
// free to deliver the control responses a turn waits for.
type queue[T any] struct {
	// mu guards items and closed; ready is signalled (never blocking) when either changes.
	mu     sync.Mutex
	items  []T
	closed bool
	ready  chan struct{}
}

func newQueue[T any]() *queue[T] { return &queue[T]{ready: make(chan struct{}, 1)} }

func (q *queue[T]) push(v T) {
	q.mu.Lock()
	if !q.closed {
		q.items = append(q.items, v)
	}
	q.mu.Unlock()
	q.signal()
}

// close ends the queue: pop drains what is left, then reports false.
func (q *queue[T]) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

func (q *queue[T]) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// pop returns the next item, waiting for one; ok is false once the queue is closed and
// empty, or ctx ended.
func (q *queue[T]) pop(ctx context.Context) (v T, ok bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			v = q.items[0]
			var zero T
			q.items[0] = zero
			q.items = q.items[1:]
			more := len(q.items) > 0
			q.mu.Unlock()
			if more {
				q.signal()
			}
			return v, true
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			q.signal() // wake another popper, if any
			return v, false
		}
		select {
		case <-q.ready:
		case <-ctx.Done():
			return v, false
		}
	}
}

// available reports whether pop would return at once: an item waits or the queue is closed.
func (q *queue[T]) available() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) > 0 || q.closed
}

// wait blocks until pop would return at once (true), or ctx ends (false).
func (q *queue[T]) wait(ctx context.Context) bool {
	for {
		if q.available() {
			q.signal() // the signal taken belongs to pop
			return true
		}
		select {
		case <-q.ready:
		case <-ctx.Done():
			return false
		}
	}
}

// snapshot returns the queued items without removing them.
func (q *queue[T]) snapshot() []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]T(nil), q.items...)
}
