package fscoord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/coord"
)

type board struct {
	b    *Backend
	lock *fileLock
	// cache is guarded by lock (held during every locked operation).
	cache *boardCache
}

var _ coord.Board = (*board)(nil)

func (bd *board) taskPath(id string) string { return bd.b.path("board", "tasks", id+".json") }

// boardState is board/state: the next task id, and a revision bumped by every change with
// the ids each recent revision touched, so a handle can bring its cached copy of the board up
// to date by reading only what changed. It is written before the task files it describes: a
// writer that dies between the two leaves task files that are simply not yet changed.
type boardState struct {
	// Epoch names one lineage of revisions; a rebuilt state (missing or damaged) gets a new
	// one, which invalidates every cache.
	Epoch string      `json:"epoch"`
	Rev   uint64      `json:"rev"`
	Next  int         `json:"next"`
	Log   []revChange `json:"log,omitempty"`
}

type revChange struct {
	Rev uint64   `json:"rev"`
	IDs []string `json:"ids"`
}

// keepRevs is how many revisions the state remembers the ids of.
const keepRevs = 128

// boardCache is a handle's copy of the board at one revision; guarded by the board lock's
// mutex, like everything done under the lock.
type boardCache struct {
	epoch string
	rev   uint64
	all   map[string]coord.Task
	bad   map[string]error
}

func (bd *board) readState() (boardState, bool) {
	var st boardState
	data, err := os.ReadFile(bd.b.path("board", "state"))
	if err != nil || json.Unmarshal(data, &st) != nil || st.Epoch == "" {
		return boardState{}, false
	}
	return st, true
}

// readTask reads one task file: ok false when it does not exist.
func (bd *board) readTask(id string) (t coord.Task, ok bool, err error) {
	if err := readJSON(bd.taskPath(id), &t); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return coord.Task{}, false, nil
		}
		return coord.Task{}, false, fmt.Errorf("task %s: %w; fix or delete the file", id, err)
	}
	t.Blocks = nil
	return t, true, nil
}

// snapshot reads every task. Unreadable task files are left out and reported, by id, in
// bad; the error is for the directory itself.
func (bd *board) snapshot() (all map[string]coord.Task, bad map[string]error, err error) {
	entries, err := os.ReadDir(bd.b.path("board", "tasks"))
	if err != nil {
		return nil, nil, fmt.Errorf("read task board: %w", err)
	}
	all, bad = map[string]coord.Task{}, map[string]error{}
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || temporary(e.Name()) {
			continue
		}
		bd.load(all, bad, id)
	}
	return all, bad, nil
}

// load (re)reads task id into all or bad.
func (bd *board) load(all map[string]coord.Task, bad map[string]error, id string) {
	delete(all, id)
	delete(bad, id)
	t, ok, err := bd.readTask(id)
	switch {
	case err != nil:
		bad[id] = err
	case ok:
		all[id] = t
	}
}

// view is the board as one locked operation sees and changes it.
type view struct {
	bd  *board
	st  boardState
	all map[string]coord.Task
	bad map[string]error
	// puts and dels are the changes to write, by id.
	puts map[string]coord.Task
	dels map[string]bool
}

func (v *view) put(t coord.Task) {
	t.Blocks = nil
	v.all[t.ID] = t
	v.puts[t.ID] = t
}

func (v *view) del(id string) {
	delete(v.all, id)
	delete(v.bad, id)
	delete(v.puts, id)
	v.dels[id] = true
}

// fresh re-reads the named tasks from disk; if any differs from the cached copy (someone
// edited a file by hand), the whole board is read again.
func (v *view) fresh(ids ...string) error {
	_, err := v.refresh(ids...)
	return err
}

// refresh is fresh, also saying whether the board was read again.
func (v *view) refresh(ids ...string) (bool, error) {
	for _, id := range ids {
		t, ok, err := v.bd.readTask(id)
		cached, had := v.all[id]
		_, wasBad := v.bad[id]
		same := (err != nil && wasBad) || (!ok && err == nil && !had && !wasBad) ||
			(ok && had && t.Revision == cached.Revision && t.Updated.Equal(cached.Updated))
		if !same {
			all, bad, err := v.bd.snapshot()
			if err != nil {
				return false, err
			}
			v.all, v.bad = all, bad
			return true, nil
		}
	}
	return false, nil
}

// nextID returns the next task id; the counter never goes below the highest id on the
// board, so ids are never reused while tasks exist.
func (v *view) nextID() string {
	next := max(v.st.Next, 1)
	for _, m := range []map[string]coord.Task{v.all} {
		for id := range m {
			if n, err := strconv.Atoi(id); err == nil && n >= next {
				next = n + 1
			}
		}
	}
	for id := range v.bad {
		if n, err := strconv.Atoi(id); err == nil && n >= next {
			next = n + 1
		}
	}
	v.st.Next = next + 1
	return strconv.Itoa(next)
}

// locked runs fn on an up-to-date view of the board under the board's lock, then writes
// what fn changed: the state first, then the task files.
func (bd *board) locked(ctx context.Context, what string, fn func(v *view) error) error {
	if err := bd.b.live(ctx, what); err != nil {
		return err
	}
	return bd.lock.with(ctx, func() error {
		v, err := bd.view()
		if err != nil {
			return err
		}
		if err := fn(v); err != nil {
			return err
		}
		if len(v.puts) == 0 && len(v.dels) == 0 {
			return nil
		}
		return bd.commit(v)
	})
}

// view brings the handle's cache up to date with the state on disk.
func (bd *board) view() (*view, error) {
	st, ok := bd.readState()
	c := bd.cache
	switch {
	case ok && c != nil && c.epoch == st.Epoch && c.rev == st.Rev:
	case ok && c != nil && c.epoch == st.Epoch && len(st.Log) > 0 && c.rev+1 >= st.Log[0].Rev && c.rev < st.Rev:
		for _, ch := range st.Log {
			if ch.Rev > c.rev {
				for _, id := range ch.IDs {
					bd.load(c.all, c.bad, id)
				}
			}
		}
		c.rev = st.Rev
	default:
		all, bad, err := bd.snapshot()
		if err != nil {
			return nil, err
		}
		if !ok {
			// No usable state: a new lineage, so that every handle's cache is dropped.
			st = boardState{Epoch: coord.NewID(), Next: st.Next}
		}
		c = &boardCache{epoch: st.Epoch, rev: st.Rev, all: all, bad: bad}
		bd.cache = c
	}
	return &view{bd: bd, st: st, all: maps.Clone(c.all), bad: maps.Clone(c.bad), puts: map[string]coord.Task{}, dels: map[string]bool{}}, nil
}

func (bd *board) commit(v *view) error {
	var ids []string
	for id := range v.puts {
		ids = append(ids, id)
	}
	for id := range v.dels {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, coord.CompareIDs)
	v.st.Rev++
	v.st.Log = append(v.st.Log, revChange{Rev: v.st.Rev, IDs: ids})
	if n := len(v.st.Log); n > keepRevs {
		v.st.Log = v.st.Log[n-keepRevs:]
	}
	data, err := json.Marshal(v.st)
	if err != nil {
		return fmt.Errorf("encode board state: %w", err)
	}
	bd.cache = nil // until everything below is written
	if err := bd.b.replace(bd.b.path("board", "state"), "state", data); err != nil {
		return err
	}
	for _, id := range ids {
		if v.dels[id] {
			if err := os.Remove(bd.taskPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("delete task %s: %w", id, err)
			}
			continue
		}
		t := v.puts[id]
		data, err := json.MarshalIndent(t, "", "  ")
		if err != nil {
			return fmt.Errorf("encode task %s: %w", id, err)
		}
		if err := bd.b.replace(bd.taskPath(id), "task-"+id, data); err != nil {
			return err
		}
	}
	bd.cache = &boardCache{epoch: v.st.Epoch, rev: v.st.Rev, all: v.all, bad: v.bad}
	return nil
}

func (bd *board) Create(ctx context.Context, t coord.Task) (coord.Task, error) {
	var out coord.Task
	err := bd.locked(ctx, "create task", func(v *view) error {
		if err := v.fresh(t.BlockedBy...); err != nil {
			return err
		}
		for _, b := range t.BlockedBy {
			if err, ok := v.bad[b]; ok {
				return fmt.Errorf("create task: %w", err)
			}
		}
		if err := coord.CheckNew(t, v.all); err != nil {
			return err
		}
		now := bd.b.cfg.Now()
		t.ID, t.Revision, t.Created, t.Updated, t.Blocks, t.LeaseUntil = v.nextID(), 1, now, now, nil, time.Time{}
		if t.Status == "" {
			t.Status = coord.StatusPending
		}
		v.put(t)
		out = coord.WithBlocks(t, v.all)
		return nil
	})
	return out, err
}

// find returns task id from a view, or why it cannot.
func find(v *view, id, what string) (coord.Task, error) {
	if err, ok := v.bad[id]; ok {
		return coord.Task{}, fmt.Errorf("%s: %w", what, err)
	}
	t, ok := v.all[id]
	if !ok {
		return coord.Task{}, fmt.Errorf("%s: task %s does not exist: %w", what, id, coord.ErrNotFound)
	}
	return t, nil
}

// readView is a view for reading without the lock: every file is replaced whole, so a
// snapshot is consistent task by task.
func (bd *board) readView(ctx context.Context, what string) (*view, error) {
	if err := bd.b.live(ctx, what); err != nil {
		return nil, err
	}
	all, bad, err := bd.snapshot()
	if err != nil {
		return nil, err
	}
	return &view{bd: bd, all: all, bad: bad}, nil
}

func (bd *board) Get(ctx context.Context, id string) (coord.Task, error) {
	v, err := bd.readView(ctx, "get task")
	if err != nil {
		return coord.Task{}, err
	}
	t, err := find(v, id, "get task")
	if err != nil {
		return coord.Task{}, err
	}
	return coord.WithBlocks(t, v.all), nil
}

func (bd *board) List(ctx context.Context) ([]coord.Task, error) {
	v, err := bd.readView(ctx, "list tasks")
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, id := range slices.SortedFunc(maps.Keys(v.bad), coord.CompareIDs) {
		errs = append(errs, v.bad[id])
	}
	return coord.Sorted(v.all), errors.Join(errs...)
}

func (bd *board) Update(ctx context.Context, id string, ch coord.TaskChange) (coord.Task, error) {
	var out coord.Task
	err := bd.locked(ctx, "update task", func(v *view) error {
		others := append(append([]string{id}, ch.AddBlockedBy...), ch.AddBlocks...)
		if err := v.fresh(others...); err != nil {
			return err
		}
		if _, err := find(v, id, "update task"); err != nil {
			return err
		}
		for _, other := range others {
			if err, ok := v.bad[other]; ok {
				return fmt.Errorf("update task %s: %w", id, err)
			}
		}
		changed, err := coord.Apply(v.all, id, ch, bd.b.cfg.Now())
		if err != nil {
			return err
		}
		for _, t := range changed {
			v.put(t)
		}
		out = coord.WithBlocks(changed[0], v.all)
		return nil
	})
	return out, err
}

func (bd *board) Delete(ctx context.Context, id string) error {
	return bd.locked(ctx, "delete task", func(v *view) error {
		if err := v.fresh(id); err != nil {
			return err
		}
		if _, isBad := v.bad[id]; !isBad {
			if _, ok := v.all[id]; !ok {
				return fmt.Errorf("delete task: task %s does not exist: %w", id, coord.ErrNotFound)
			}
		}
		now := bd.b.cfg.Now()
		for _, t := range v.all {
			t, ok := coord.WithoutBlocker(t, id, now)
			if !ok {
				continue
			}
			v.put(t)
		}
		v.del(id)
		return nil
	})
}

func (bd *board) claim(v *view, t coord.Task, owner string, lease time.Duration) coord.Task {
	now := bd.b.cfg.Now()
	c := coord.Claimed(t, owner, lease, now)
	c.Revision++
	c.Updated = now
	v.put(c)
	return coord.WithBlocks(c, v.all)
}

func (bd *board) Claim(ctx context.Context, id, owner string, lease time.Duration) (coord.Task, error) {
	if owner == "" {
		return coord.Task{}, fmt.Errorf("claim task %s: no owner: %w", id, coord.ErrInvalid)
	}
	var out coord.Task
	err := bd.locked(ctx, "claim task", func(v *view) error {
		if err := v.fresh(id); err != nil {
			return err
		}
		t, err := find(v, id, "claim task")
		if err != nil {
			return err
		}
		if err := coord.CanClaim(t, guarded(v.all, v.bad), owner, bd.b.cfg.Now()); err != nil {
			return fmt.Errorf("%s cannot claim it: %w", owner, err)
		}
		out = bd.claim(v, t, owner, lease)
		return nil
	})
	return out, err
}

func (bd *board) ClaimNext(ctx context.Context, owner string, lease time.Duration) (coord.Task, error) {
	if owner == "" {
		return coord.Task{}, fmt.Errorf("claim next task: no owner: %w", coord.ErrInvalid)
	}
	var out coord.Task
	err := bd.locked(ctx, "claim next task", func(v *view) error {
		for range 2 {
			t, ok := coord.NextClaim(guarded(v.all, v.bad), owner, bd.b.cfg.Now())
			if !ok {
				return fmt.Errorf("no task on the board is claimable by %s now (all are completed, held, assigned to others or blocked): %w", owner, coord.ErrNoTask)
			}
			reread, err := v.refresh(t.ID)
			if err != nil {
				return err
			}
			if !reread {
				out = bd.claim(v, t, owner, lease)
				return nil
			}
			// The file differed from the cache: choose again from the board as read now.
		}
		return fmt.Errorf("claim next task: the board keeps changing under the lock, which only happens when its files are edited by hand: %w", coord.ErrConflict)
	})
	return out, err
}

func (bd *board) Renew(ctx context.Context, id, owner string, lease time.Duration) (coord.Task, error) {
	var out coord.Task
	err := bd.locked(ctx, "renew claim", func(v *view) error {
		if err := v.fresh(id); err != nil {
			return err
		}
		t, err := find(v, id, "renew claim")
		if err != nil {
			return err
		}
		if t.Status != coord.StatusInProgress || t.Owner != owner {
			return fmt.Errorf("renew claim of task %s: it is %s and held by %s, not %s: %w", id, t.Status, holder(t), owner, coord.ErrNotOwner)
		}
		out = bd.claim(v, t, owner, lease)
		return nil
	})
	return out, err
}

// unreadable holds the place of a task whose file cannot be read: never claimable, and
// blocking whatever waits for it, since nobody knows whether it is done.
const unreadable = "(unreadable task file)"

// guarded returns all with a placeholder for every unreadable task.
func guarded(all map[string]coord.Task, bad map[string]error) map[string]coord.Task {
	if len(bad) == 0 {
		return all
	}
	g := maps.Clone(all)
	for id := range bad {
		g[id] = coord.Task{ID: id, Status: coord.StatusInProgress, Owner: unreadable}
	}
	return g
}

func holder(t coord.Task) string {
	if t.Owner == "" || t.Status != coord.StatusInProgress {
		return "nobody"
	}
	return t.Owner
}

func (bd *board) Release(ctx context.Context, id, owner string) (coord.Task, error) {
	var out coord.Task
	err := bd.locked(ctx, "release task", func(v *view) error {
		if err := v.fresh(id); err != nil {
			return err
		}
		t, err := find(v, id, "release task")
		if err != nil {
			return err
		}
		if t.Status != coord.StatusInProgress || t.Owner != owner {
			return fmt.Errorf("release task %s: it is %s and held by %s, not %s: %w", id, t.Status, holder(t), owner, coord.ErrNotOwner)
		}
		t = coord.Released(t, owner, bd.b.cfg.Now())
		t.Revision++
		t.Updated = bd.b.cfg.Now()
		v.put(t)
		out = coord.WithBlocks(t, v.all)
		return nil
	})
	return out, err
}

func (bd *board) Watch(ctx context.Context) (<-chan struct{}, error) {
	if err := bd.b.live(ctx, "watch board"); err != nil {
		return nil, err
	}
	return bd.b.hub.watch(ctx, func(name string) bool { return strings.HasSuffix(name, ".json") }, bd.b.path("board", "tasks"))
}
