package natscoord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/keel-dev/keel/internal/coord"
)

// graphLockTTL is how long the dependency lock outlives a holder that died holding it.
const graphLockTTL = 30 * time.Second

type board struct {
	b    *Backend
	kv   jetstream.KeyValue
	view *view
}

var _ coord.Board = (*board)(nil)

func newBoard(b *Backend) *board { return &board{b: b, kv: b.boardKV} }

func taskKey(id string) string { return "task." + id }

// start begins the handle's watch of the board and waits until it holds the whole board.
func (bd *board) start(ctx context.Context) error {
	what := fmt.Sprintf("watch the board of team %s on NATS at %s", bd.b.team, bd.b.url)
	return bd.b.retry(ctx, what, func(ctx context.Context) error {
		stream, err := bd.b.js.Stream(ctx, "KV_"+bd.kv.Bucket())
		if err != nil {
			return err
		}
		v := newView(bd.kv, stream)
		last, err := v.load(ctx)
		if err != nil {
			return err
		}
		// The watch lives as long as the handle.
		w, err := bd.kv.WatchAll(bd.b.stop, jetstream.ResumeFromRevision(last+1))
		if err != nil {
			return err
		}
		bd.view = v
		bd.b.wg.Go(func() { v.run(bd.b.stop, w) })
		return nil
	})
}

// change runs fn on a fresh, consistent view until its writes land: fn returns errLost when
// a compare-and-set lost a race, and runs again on a view that includes the winner's write.
func (bd *board) change(ctx context.Context, what string, fn func(ctx context.Context, s snap) error) error {
	if err := bd.b.live(ctx, what); err != nil {
		return err
	}
	return bd.b.retry(ctx, what, func(ctx context.Context) error {
		s, err := bd.view.fence(ctx)
		for lost := 0; err == nil; lost++ {
			if err = fn(ctx, s); !errors.Is(err, errLost) {
				return err
			}
			// Many claimers go for the same (lowest) task: a loser steps back for a random
			// moment, growing with its losses, so that they do not all pile onto the next one.
			if err = pause(ctx, lost); err == nil {
				s, err = bd.view.after(ctx, s)
			}
		}
		return err
	})
}

// pause waits a random moment of up to 100µs·2^lost (at most 25 ms).
func pause(ctx context.Context, lost int) error {
	d := rand.N(min(100*time.Microsecond<<min(lost, 8), 25*time.Millisecond))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// errLost marks a compare-and-set that lost a race; [board.change] runs the step again.
var errLost = errors.New("lost a race")

// put writes t at the key's revision rev (0: the key must not exist).
func (bd *board) put(ctx context.Context, t coord.Task, rev uint64) error {
	t.Blocks = nil
	data, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("encode task %s: %w", t.ID, err)
	}
	if rev == 0 {
		_, err = bd.kv.Create(ctx, taskKey(t.ID), data)
		if errors.Is(err, jetstream.ErrKeyExists) {
			return errLost
		}
	} else {
		_, err = bd.kv.Update(ctx, taskKey(t.ID), data, rev)
	}
	if wrongLastSeq(err) {
		return errLost
	}
	if err != nil {
		return fmt.Errorf("write task %s: %w", t.ID, err)
	}
	return nil
}

func (bd *board) Create(ctx context.Context, t coord.Task) (coord.Task, error) {
	var out coord.Task
	err := bd.change(ctx, "create task", func(ctx context.Context, s snap) error {
		if err := coord.CheckNew(t, s.tasks); err != nil {
			return err
		}
		id, err := bd.reserveID(ctx, s)
		if err != nil {
			return err
		}
		now := bd.b.cfg.Now()
		n := t
		n.ID, n.Revision, n.Created, n.Updated, n.Blocks, n.LeaseUntil = id, 1, now, now, nil, time.Time{}
		if n.Status == "" {
			n.Status = coord.StatusPending
		}
		if err := bd.put(ctx, n, 0); err != nil {
			return err
		}
		s.tasks[id] = n
		out = coord.WithBlocks(n, s.tasks)
		return nil
	})
	return out, err
}

// reserveID advances the id counter by compare-and-set and returns the id it reserved. A
// missing or lagging counter starts above the highest id on the board, so ids are never
// reused while tasks exist; an id reserved by a creator that then died is skipped.
func (bd *board) reserveID(ctx context.Context, s snap) (string, error) {
	next := max(s.next, 1)
	for id := range s.tasks {
		if n, err := strconv.ParseUint(id, 10, 64); err == nil && n >= next {
			next = n + 1
		}
	}
	for id := range s.bad {
		if n, err := strconv.ParseUint(id, 10, 64); err == nil && n >= next {
			next = n + 1
		}
	}
	data := []byte(strconv.FormatUint(next+1, 10))
	var err error
	if s.nextRev == 0 {
		_, err = bd.kv.Create(ctx, "next", data)
		if errors.Is(err, jetstream.ErrKeyExists) {
			return "", errLost
		}
	} else {
		_, err = bd.kv.Update(ctx, "next", data, s.nextRev)
	}
	if wrongLastSeq(err) {
		return "", errLost
	}
	if err != nil {
		return "", fmt.Errorf("reserve a task id: %w", err)
	}
	return strconv.FormatUint(next, 10), nil
}

func (bd *board) Get(ctx context.Context, id string) (coord.Task, error) {
	var out coord.Task
	err := bd.read(ctx, "get task", func(s snap) error {
		t, err := s.find(id, "get task")
		out = coord.WithBlocks(t, s.tasks)
		return err
	})
	return out, err
}

func (bd *board) List(ctx context.Context) ([]coord.Task, error) {
	var out []coord.Task
	err := bd.read(ctx, "list tasks", func(s snap) error {
		out = coord.Sorted(s.tasks)
		var errs []error
		for _, id := range slices.SortedFunc(maps.Keys(s.bad), coord.CompareIDs) {
			errs = append(errs, s.bad[id])
		}
		return errors.Join(errs...)
	})
	return out, err
}

func (bd *board) read(ctx context.Context, what string, fn func(s snap) error) error {
	if err := bd.b.live(ctx, what); err != nil {
		return err
	}
	var s snap
	err := bd.b.retry(ctx, what, func(ctx context.Context) error {
		var err error
		s, err = bd.view.fence(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return fn(s)
}

func (bd *board) Update(ctx context.Context, id string, ch coord.TaskChange) (coord.Task, error) {
	if len(ch.AddBlockedBy)+len(ch.AddBlocks) > 0 {
		var out coord.Task
		err := bd.withGraphLock(ctx, "update task", func(ctx context.Context) error {
			var err error
			out, err = bd.update(ctx, id, ch)
			return err
		})
		return out, err
	}
	return bd.update(ctx, id, ch)
}

func (bd *board) update(ctx context.Context, id string, ch coord.TaskChange) (coord.Task, error) {
	var out coord.Task
	err := bd.change(ctx, "update task", func(ctx context.Context, s snap) error {
		if _, err := s.find(id, "update task"); err != nil {
			return err
		}
		for _, other := range slices.Concat(ch.AddBlockedBy, ch.AddBlocks) {
			if err, ok := s.bad[other]; ok {
				return fmt.Errorf("update task %s: %w", id, err)
			}
		}
		changed, err := coord.Apply(s.tasks, id, ch, bd.b.cfg.Now())
		if err != nil {
			return err
		}
		// The tasks that only gained a dependency first, the task itself last: a step that
		// loses a race midway runs again and finds the edges already there.
		for _, t := range slices.Backward(changed) {
			if err := bd.put(ctx, t, s.revs[t.ID]); err != nil {
				return err
			}
			s.tasks[t.ID] = t
		}
		out = coord.WithBlocks(changed[0], s.tasks)
		return nil
	})
	return out, err
}

func (bd *board) Delete(ctx context.Context, id string) error {
	return bd.withGraphLock(ctx, "delete task", func(ctx context.Context) error {
		return bd.change(ctx, "delete task", func(ctx context.Context, s snap) error {
			rev, exists := s.revs[id]
			if !exists {
				return fmt.Errorf("delete task: task %s does not exist: %w", id, coord.ErrNotFound)
			}
			// The task goes first: a dependency on a task that no longer exists blocks
			// nothing, so a crash before the edges are gone leaves no task claimable early.
			err := bd.kv.Delete(ctx, taskKey(id), jetstream.LastRevision(rev))
			if wrongLastSeq(err) {
				return errLost
			}
			if err != nil {
				return fmt.Errorf("delete task %s: %w", id, err)
			}
			return bd.dropEdges(ctx, id)
		})
	})
}

// dropEdges removes every dependency on the deleted task id.
func (bd *board) dropEdges(ctx context.Context, id string) error {
	for {
		s, err := bd.view.fence(ctx)
		if err != nil {
			return err
		}
		lost := false
		now := bd.b.cfg.Now()
		for _, t := range s.tasks {
			t, ok := coord.WithoutBlocker(t, id, now)
			if !ok {
				continue
			}
			if err := bd.put(ctx, t, s.revs[t.ID]); errors.Is(err, errLost) {
				lost = true
			} else if err != nil {
				return err
			}
		}
		if !lost {
			return nil
		}
	}
}

// claim writes t claimed by owner.
func (bd *board) claim(ctx context.Context, s snap, t coord.Task, owner string, lease time.Duration) (coord.Task, error) {
	now := bd.b.cfg.Now()
	c := coord.Claimed(t, owner, lease, now)
	c.Revision++
	c.Updated = now
	if err := bd.put(ctx, c, s.revs[c.ID]); err != nil {
		return coord.Task{}, err
	}
	s.tasks[c.ID] = c
	return coord.WithBlocks(c, s.tasks), nil
}

func (bd *board) Claim(ctx context.Context, id, owner string, lease time.Duration) (coord.Task, error) {
	if owner == "" {
		return coord.Task{}, fmt.Errorf("claim task %s: no owner: %w", id, coord.ErrInvalid)
	}
	var out coord.Task
	err := bd.change(ctx, "claim task", func(ctx context.Context, s snap) error {
		t, err := s.find(id, "claim task")
		if err != nil {
			return err
		}
		if err := coord.CanClaim(t, s.guarded(), owner, bd.b.cfg.Now()); err != nil {
			return fmt.Errorf("%s cannot claim it: %w", owner, err)
		}
		out, err = bd.claim(ctx, s, t, owner, lease)
		return err
	})
	return out, err
}

func (bd *board) ClaimNext(ctx context.Context, owner string, lease time.Duration) (coord.Task, error) {
	if owner == "" {
		return coord.Task{}, fmt.Errorf("claim next task: no owner: %w", coord.ErrInvalid)
	}
	var out coord.Task
	err := bd.change(ctx, "claim next task", func(ctx context.Context, s snap) error {
		t, ok := coord.NextClaim(s.guarded(), owner, bd.b.cfg.Now())
		if !ok {
			return fmt.Errorf("no task on the board is claimable by %s now (all are completed, held, assigned to others or blocked): %w", owner, coord.ErrNoTask)
		}
		var err error
		out, err = bd.claim(ctx, s, t, owner, lease)
		return err
	})
	return out, err
}

func holder(t coord.Task) string {
	if t.Owner == "" || t.Status != coord.StatusInProgress {
		return "nobody"
	}
	return t.Owner
}

func (bd *board) Renew(ctx context.Context, id, owner string, lease time.Duration) (coord.Task, error) {
	var out coord.Task
	err := bd.change(ctx, "renew claim", func(ctx context.Context, s snap) error {
		t, err := s.find(id, "renew claim")
		if err != nil {
			return err
		}
		if t.Status != coord.StatusInProgress || t.Owner != owner {
			return fmt.Errorf("renew claim of task %s: it is %s and held by %s, not %s: %w", id, t.Status, holder(t), owner, coord.ErrNotOwner)
		}
		out, err = bd.claim(ctx, s, t, owner, lease)
		return err
	})
	return out, err
}

func (bd *board) Release(ctx context.Context, id, owner string) (coord.Task, error) {
	var out coord.Task
	err := bd.change(ctx, "release task", func(ctx context.Context, s snap) error {
		t, err := s.find(id, "release task")
		if err != nil {
			return err
		}
		if t.Status != coord.StatusInProgress || t.Owner != owner {
			return fmt.Errorf("release task %s: it is %s and held by %s, not %s: %w", id, t.Status, holder(t), owner, coord.ErrNotOwner)
		}
		t = coord.Released(t, owner, bd.b.cfg.Now())
		t.Revision++
		t.Updated = bd.b.cfg.Now()
		if err := bd.put(ctx, t, s.revs[id]); err != nil {
			return err
		}
		s.tasks[id] = t
		out = coord.WithBlocks(t, s.tasks)
		return nil
	})
	return out, err
}

func (bd *board) Watch(ctx context.Context) (<-chan struct{}, error) {
	return bd.b.watch(ctx, "watch board", func(_ context.Context, sig *signal) (func(), error) {
		bd.view.subscribe(sig)
		return func() { bd.view.unsubscribe(sig) }, nil
	})
}

// withGraphLock runs fn holding the board's dependency lock: a key created with a TTL, so
// that a holder that dies cannot wedge the board. Dependency changes are rare; claims and
// plain updates never take it.
func (bd *board) withGraphLock(ctx context.Context, what string, fn func(ctx context.Context) error) error {
	if err := bd.b.live(ctx, what); err != nil {
		return err
	}
	var rev uint64
	err := bd.b.retry(ctx, what, func(ctx context.Context) error {
		for {
			var err error
			rev, err = bd.kv.Create(ctx, "lock.graph", []byte(`"`+bd.b.id+`"`), jetstream.KeyTTL(graphLockTTL))
			if err == nil {
				return nil
			}
			if !errors.Is(err, jetstream.ErrKeyExists) {
				return fmt.Errorf("take the board's dependency lock: %w", err)
			}
			if err := bd.view.waitChange(ctx); err != nil {
				return fmt.Errorf("wait for the board's dependency lock: %w", err)
			}
		}
	})
	if err != nil {
		return err
	}
	defer func() {
		// Released even when ctx has ended; a release that fails leaves the TTL to do it.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := bd.kv.Delete(rctx, "lock.graph", jetstream.LastRevision(rev)); err != nil {
			bd.b.cfg.Logger.Warn("nats: release the board's dependency lock", "err", err)
		}
	}()
	return fn(ctx)
}
