package fscoord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/coord"
)

type board struct {
	b    *Backend
	lock *fileLock
}

var _ coord.Board = (*board)(nil)

func (bd *board) taskPath(id string) string { return bd.b.path("board", "tasks", id+".json") }

// snapshot reads every task. Unreadable task files are left out and reported, by id, in
// bad; the error is for the directory itself.
func (bd *board) snapshot() (all map[string]coord.Task, bad map[string]error, err error) {
	dir := bd.b.path("board", "tasks")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("read task board: %w", err)
	}
	all, bad = map[string]coord.Task{}, map[string]error{}
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || temporary(e.Name()) {
			continue
		}
		var t coord.Task
		if err := readJSON(dir+"/"+e.Name(), &t); err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				bad[id] = fmt.Errorf("task %s: %w; fix or delete the file", id, err)
			}
			continue
		}
		t.Blocks = nil
		all[id] = t
	}
	return all, bad, nil
}

func (bd *board) write(t coord.Task) error {
	t.Blocks = nil
	data, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return fmt.Errorf("encode task %s: %w", t.ID, err)
	}
	return bd.b.replace(bd.taskPath(t.ID), "task-"+t.ID, data)
}

// locked runs fn on a fresh snapshot under the board's lock.
func (bd *board) locked(ctx context.Context, what string, fn func(all map[string]coord.Task, bad map[string]error) error) error {
	if err := bd.b.live(ctx, what); err != nil {
		return err
	}
	return bd.lock.with(ctx, func() error {
		all, bad, err := bd.snapshot()
		if err != nil {
			return err
		}
		return fn(all, bad)
	})
}

// nextID reads and advances the id counter; a missing or damaged counter is rebuilt from
// the highest id on the board, so ids are never reused while tasks exist.
func (bd *board) nextID(all map[string]coord.Task, bad map[string]error) (string, error) {
	path := bd.b.path("board", "next")
	next := 0
	if data, err := os.ReadFile(path); err == nil {
		next, _ = strconv.Atoi(strings.TrimSpace(string(data)))
	}
	for id := range all {
		if n, err := strconv.Atoi(id); err == nil && n >= next {
			next = n + 1
		}
	}
	for id := range bad {
		if n, err := strconv.Atoi(id); err == nil && n >= next {
			next = n + 1
		}
	}
	next = max(next, 1)
	if err := bd.b.replace(path, "next", []byte(strconv.Itoa(next+1)+"\n")); err != nil {
		return "", err
	}
	return strconv.Itoa(next), nil
}

func (bd *board) Create(ctx context.Context, t coord.Task) (coord.Task, error) {
	var out coord.Task
	err := bd.locked(ctx, "create task", func(all map[string]coord.Task, bad map[string]error) error {
		if err := coord.CheckNew(t, all); err != nil {
			return err
		}
		id, err := bd.nextID(all, bad)
		if err != nil {
			return err
		}
		now := bd.b.cfg.Now()
		t.ID, t.Revision, t.Created, t.Updated, t.Blocks, t.LeaseUntil = id, 1, now, now, nil, time.Time{}
		if t.Status == "" {
			t.Status = coord.StatusPending
		}
		if err := bd.write(t); err != nil {
			return err
		}
		all[id] = t
		out = coord.WithBlocks(t, all)
		return nil
	})
	return out, err
}

// find returns task id from a snapshot, or why it cannot.
func find(all map[string]coord.Task, bad map[string]error, id, what string) (coord.Task, error) {
	if err, ok := bad[id]; ok {
		return coord.Task{}, fmt.Errorf("%s: %w", what, err)
	}
	t, ok := all[id]
	if !ok {
		return coord.Task{}, fmt.Errorf("%s: task %s does not exist: %w", what, id, coord.ErrNotFound)
	}
	return t, nil
}

func (bd *board) Get(ctx context.Context, id string) (coord.Task, error) {
	if err := bd.b.live(ctx, "get task"); err != nil {
		return coord.Task{}, err
	}
	// Reads need no lock: every file is replaced whole.
	all, bad, err := bd.snapshot()
	if err != nil {
		return coord.Task{}, err
	}
	t, err := find(all, bad, id, "get task")
	if err != nil {
		return coord.Task{}, err
	}
	return coord.WithBlocks(t, all), nil
}

func (bd *board) List(ctx context.Context) ([]coord.Task, error) {
	if err := bd.b.live(ctx, "list tasks"); err != nil {
		return nil, err
	}
	all, bad, err := bd.snapshot()
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, e := range bad {
		errs = append(errs, e)
	}
	return coord.Sorted(all), errors.Join(errs...)
}

func (bd *board) Update(ctx context.Context, id string, ch coord.TaskChange) (coord.Task, error) {
	var out coord.Task
	err := bd.locked(ctx, "update task", func(all map[string]coord.Task, bad map[string]error) error {
		if _, err := find(all, bad, id, "update task"); err != nil {
			return err
		}
		for _, other := range append(append([]string(nil), ch.AddBlockedBy...), ch.AddBlocks...) {
			if err, ok := bad[other]; ok {
				return fmt.Errorf("update task %s: %w", id, err)
			}
		}
		changed, err := coord.Apply(all, id, ch, bd.b.cfg.Now())
		if err != nil {
			return err
		}
		for _, t := range changed {
			if err := bd.write(t); err != nil {
				return err
			}
			all[t.ID] = t
		}
		out = coord.WithBlocks(changed[0], all)
		return nil
	})
	return out, err
}

func (bd *board) Delete(ctx context.Context, id string) error {
	return bd.locked(ctx, "delete task", func(all map[string]coord.Task, bad map[string]error) error {
		if _, isBad := bad[id]; !isBad {
			if _, ok := all[id]; !ok {
				return fmt.Errorf("delete task: task %s does not exist: %w", id, coord.ErrNotFound)
			}
		}
		now := bd.b.cfg.Now()
		for _, t := range all {
			kept := t.BlockedBy[:0:0]
			for _, b := range t.BlockedBy {
				if b != id {
					kept = append(kept, b)
				}
			}
			if len(kept) != len(t.BlockedBy) {
				t.BlockedBy, t.Revision, t.Updated = kept, t.Revision+1, now
				if len(kept) == 0 {
					t.BlockedBy = nil
				}
				if err := bd.write(t); err != nil {
					return err
				}
			}
		}
		if err := os.Remove(bd.taskPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("delete task %s: %w", id, err)
		}
		return nil
	})
}

func (bd *board) claim(all map[string]coord.Task, t coord.Task, owner string, lease time.Duration) (coord.Task, error) {
	now := bd.b.cfg.Now()
	c := coord.Claimed(t, owner, lease, now)
	c.Revision++
	c.Updated = now
	if err := bd.write(c); err != nil {
		return coord.Task{}, err
	}
	all[c.ID] = c
	return coord.WithBlocks(c, all), nil
}

func (bd *board) Claim(ctx context.Context, id, owner string, lease time.Duration) (coord.Task, error) {
	if owner == "" {
		return coord.Task{}, fmt.Errorf("claim task %s: no owner: %w", id, coord.ErrInvalid)
	}
	var out coord.Task
	err := bd.locked(ctx, "claim task", func(all map[string]coord.Task, bad map[string]error) error {
		t, err := find(all, bad, id, "claim task")
		if err != nil {
			return err
		}
		if err := coord.CanClaim(t, guarded(all, bad), owner, bd.b.cfg.Now()); err != nil {
			return fmt.Errorf("%s cannot claim it: %w", owner, err)
		}
		out, err = bd.claim(all, t, owner, lease)
		return err
	})
	return out, err
}

func (bd *board) ClaimNext(ctx context.Context, owner string, lease time.Duration) (coord.Task, error) {
	if owner == "" {
		return coord.Task{}, fmt.Errorf("claim next task: no owner: %w", coord.ErrInvalid)
	}
	var out coord.Task
	err := bd.locked(ctx, "claim next task", func(all map[string]coord.Task, bad map[string]error) error {
		t, ok := coord.NextClaim(guarded(all, bad), owner, bd.b.cfg.Now())
		if !ok {
			return fmt.Errorf("no task on the board is claimable by %s now (all are completed, held, assigned to others or blocked): %w", owner, coord.ErrNoTask)
		}
		var err error
		out, err = bd.claim(all, t, owner, lease)
		return err
	})
	return out, err
}

func (bd *board) Renew(ctx context.Context, id, owner string, lease time.Duration) (coord.Task, error) {
	var out coord.Task
	err := bd.locked(ctx, "renew claim", func(all map[string]coord.Task, bad map[string]error) error {
		t, err := find(all, bad, id, "renew claim")
		if err != nil {
			return err
		}
		if t.Status != coord.StatusInProgress || t.Owner != owner {
			return fmt.Errorf("renew claim of task %s: it is %s and held by %s, not %s: %w", id, t.Status, holder(t), owner, coord.ErrNotOwner)
		}
		out, err = bd.claim(all, t, owner, lease)
		return err
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
	err := bd.locked(ctx, "release task", func(all map[string]coord.Task, bad map[string]error) error {
		t, err := find(all, bad, id, "release task")
		if err != nil {
			return err
		}
		if t.Status != coord.StatusInProgress || t.Owner != owner {
			return fmt.Errorf("release task %s: it is %s and held by %s, not %s: %w", id, t.Status, holder(t), owner, coord.ErrNotOwner)
		}
		t.Status, t.Owner, t.LeaseUntil = coord.StatusPending, "", time.Time{}
		t.Revision++
		t.Updated = bd.b.cfg.Now()
		if err := bd.write(t); err != nil {
			return err
		}
		all[id] = t
		out = coord.WithBlocks(t, all)
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
