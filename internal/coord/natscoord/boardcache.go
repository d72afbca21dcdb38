package natscoord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/keel-dev/keel/internal/coord"
)

// view is the board as one handle last saw it: every task key's value and revision, kept
// current by a watch of the whole bucket. A read first fences — asks the stream for its last
// sequence and waits until the watch has delivered that far — so that it sees every write
// that finished before it began, from any handle.
type view struct {
	kv     jetstream.KeyValue
	stream jetstream.Stream

	// mu guards the fields below; advanced is closed (and replaced) whenever seen grows.
	mu       sync.Mutex
	tasks    map[string]coord.Task
	revs     map[string]uint64
	bad      map[string]error
	keyRevs  map[string]uint64 // every key's last revision applied
	next     uint64            // the id counter's value
	nextRev  uint64            // and its key's revision (0: no counter yet)
	lockRev  uint64            // the graph lock's revision (0: free)
	seen     uint64
	advanced chan struct{}
	kick     chan struct{}
	subs     map[*signal]struct{}
}

// snap is a consistent copy of the view.
type snap struct {
	// seen is the last revision the copy includes.
	seen    uint64
	tasks   map[string]coord.Task
	revs    map[string]uint64
	bad     map[string]error
	next    uint64
	nextRev uint64
	lockRev uint64
}

func newView(kv jetstream.KeyValue, stream jetstream.Stream) *view {
	return &view{
		kv: kv, stream: stream,
		tasks: map[string]coord.Task{}, revs: map[string]uint64{}, bad: map[string]error{}, keyRevs: map[string]uint64{},
		advanced: make(chan struct{}), kick: make(chan struct{}, 1), subs: map[*signal]struct{}{},
	}
}

// load fills the view with every key's current value, listed from the stream's own
// per-subject state (a watch's initial listing can leave keys out while others write), and
// returns the stream's last sequence at that moment: the watch resumes after it.
func (v *view) load(ctx context.Context) (uint64, error) {
	prefix := "$KV." + v.kv.Bucket() + "."
	info, err := v.stream.Info(ctx, jetstream.WithSubjectFilter(prefix+">"))
	if err != nil {
		return 0, err
	}
	for subj := range info.State.Subjects {
		e, err := v.kv.Get(ctx, strings.TrimPrefix(subj, prefix))
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return 0, err
		}
		v.apply(e)
	}
	v.advance(info.State.LastSeq)
	return info.State.LastSeq, nil
}

// run feeds the view from a watch of the bucket that resumes after what load read, until
// ctx ends. A kick (a fence that waits too long, a reconnect) replaces the watch with one
// that resumes after the last revision seen: a watch whose consumer lived on a server that
// died would otherwise stay silent until its heartbeats were missed.
func (v *view) run(ctx context.Context, w jetstream.KeyWatcher) {
	defer func() {
		if w != nil {
			_ = w.Stop()
		}
	}()
	updates := w.Updates()
	for {
		select {
		case <-ctx.Done():
			return
		case <-v.kick:
			if w != nil {
				_ = w.Stop()
			}
			w, updates = nil, nil
			nw, err := v.kv.WatchAll(ctx, jetstream.ResumeFromRevision(v.seenNow()+1))
			if err != nil {
				continue // the next kick tries again
			}
			w, updates = nw, nw.Updates()
		case e, ok := <-updates:
			if !ok {
				updates = nil // ended: wait for a kick
				continue
			}
			if e != nil { // nil: caught up
				v.apply(e)
			}
		}
	}
}

// restart asks run for a new watch; a request already waiting covers this one.
func (v *view) restart() {
	select {
	case v.kick <- struct{}{}:
	default:
	}
}

func (v *view) seenNow() uint64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.seen
}

func (v *view) apply(e jetstream.KeyValueEntry) {
	v.mu.Lock()
	defer v.mu.Unlock()
	key, rev := e.Key(), e.Revision()
	if rev <= v.keyRevs[key] {
		// Older than what load read: the watch replays from the listing's point on.
		v.advanceLocked(rev)
		return
	}
	v.keyRevs[key] = rev
	gone := e.Operation() != jetstream.KeyValuePut
	switch {
	case strings.HasPrefix(key, "task."):
		id := strings.TrimPrefix(key, "task.")
		delete(v.bad, id)
		if gone {
			delete(v.tasks, id)
			delete(v.revs, id)
		} else {
			var t coord.Task
			if err := json.Unmarshal(e.Value(), &t); err != nil {
				delete(v.tasks, id)
				v.bad[id] = fmt.Errorf("task %s (key %s of bucket %s) is not a task: %v; fix or delete the key: %w", id, key, v.kv.Bucket(), err, coord.ErrCorrupt)
			} else {
				t.Blocks = nil
				v.tasks[id] = t
			}
			v.revs[id] = rev
		}
		for sig := range v.subs {
			sig.notify()
		}
	case key == "next":
		v.next, v.nextRev = 0, 0
		if !gone {
			_ = json.Unmarshal(e.Value(), &v.next)
			v.nextRev = rev
		}
	case key == "lock.graph":
		v.lockRev = 0
		if !gone {
			v.lockRev = rev
		}
	}
	v.advanceLocked(rev)
}

func (v *view) advance(seq uint64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.advanceLocked(seq)
}

func (v *view) advanceLocked(seq uint64) {
	if seq > v.seen {
		v.seen = seq
	}
	close(v.advanced)
	v.advanced = make(chan struct{})
}

// stallWait is how long a fence waits for the watch before it restarts it. Watches deliver
// within a millisecond; one that has not caught up after this lost its consumer.
const stallWait = 250 * time.Millisecond

// fence waits until the view holds every write the stream had stored when it was called,
// and returns a copy.
func (v *view) fence(ctx context.Context) (snap, error) {
	info, err := v.stream.Info(ctx)
	if err != nil {
		return snap{}, err
	}
	last := info.State.LastSeq
	stall := time.NewTimer(stallWait)
	defer stall.Stop()
	wait := stallWait
	for {
		v.mu.Lock()
		if v.seen >= last {
			s := v.copyLocked()
			v.mu.Unlock()
			return s, nil
		}
		ch := v.advanced
		v.mu.Unlock()
		select {
		case <-ctx.Done():
			return snap{}, fmt.Errorf("wait for the board's watch to reach revision %d: %w", last, context.Cause(ctx))
		case <-ch:
		case <-stall.C:
			v.restart()
			wait = min(2*wait, 2*time.Second)
			stall.Reset(wait)
		}
	}
}

func (v *view) copyLocked() snap {
	return snap{
		seen:  v.seen,
		tasks: maps.Clone(v.tasks), revs: maps.Clone(v.revs), bad: maps.Clone(v.bad),
		next: v.next, nextRev: v.nextRev, lockRev: v.lockRev,
	}
}

// after returns the view once it holds more than s did: a compare-and-set against s lost to
// a write the watch is about to deliver, so waiting for it spares the round trip of another
// fence. A watch that stays silent (it lost its consumer) is fenced after all.
func (v *view) after(ctx context.Context, s snap) (snap, error) {
	t := time.NewTimer(stallWait)
	defer t.Stop()
	for {
		v.mu.Lock()
		if v.seen > s.seen {
			c := v.copyLocked()
			v.mu.Unlock()
			return c, nil
		}
		ch := v.advanced
		v.mu.Unlock()
		select {
		case <-ctx.Done():
			return snap{}, context.Cause(ctx)
		case <-ch:
		case <-t.C:
			return v.fence(ctx)
		}
	}
}

// waitChange waits until the view changes or ctx ends.
func (v *view) waitChange(ctx context.Context) error {
	v.mu.Lock()
	ch := v.advanced
	v.mu.Unlock()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-ch:
		return nil
	}
}

func (v *view) subscribe(sig *signal) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.subs[sig] = struct{}{}
}

func (v *view) unsubscribe(sig *signal) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.subs, sig)
}

// unreadable holds the place of a task whose value cannot be read: never claimable, and
// blocking whatever waits for it, since nobody knows whether it is done.
const unreadable = "(unreadable task)"

// guarded returns the tasks with a placeholder for every unreadable one.
func (s snap) guarded() map[string]coord.Task {
	if len(s.bad) == 0 {
		return s.tasks
	}
	g := maps.Clone(s.tasks)
	for id := range s.bad {
		g[id] = coord.Task{ID: id, Status: coord.StatusInProgress, Owner: unreadable}
	}
	return g
}

// find returns task id, or why it cannot.
func (s snap) find(id, what string) (coord.Task, error) {
	if err, ok := s.bad[id]; ok {
		return coord.Task{}, fmt.Errorf("%s: %w", what, err)
	}
	t, ok := s.tasks[id]
	if !ok {
		return coord.Task{}, fmt.Errorf("%s: task %s does not exist: %w", what, id, coord.ErrNotFound)
	}
	return t, nil
}
