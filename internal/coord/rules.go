package coord

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// The board's rules as pure functions over a snapshot of every task, so that every backend
// decides claims, dependencies and changes the same way: a backend takes its lock (or reads
// at a revision), calls these, and writes back what they changed (or retries on conflict).

// CompareIDs orders task ids numerically ("2" before "10"), non-numeric ids after, by text.
func CompareIDs(a, b string) int {
	if c := cmp.Compare(len(a), len(b)); c != 0 && numeric(a) && numeric(b) {
		return c
	}
	return strings.Compare(a, b)
}

func numeric(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// Sorted returns the tasks of all in id order, each with its derived Blocks.
func Sorted(all map[string]Task) []Task {
	blocks := map[string][]string{}
	for _, t := range all {
		for _, b := range t.BlockedBy {
			blocks[b] = append(blocks[b], t.ID)
		}
	}
	out := make([]Task, 0, len(all))
	for _, t := range all {
		t.Blocks = blocks[t.ID]
		slices.SortFunc(t.Blocks, CompareIDs)
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b Task) int { return CompareIDs(a.ID, b.ID) })
	return out
}

// WithBlocks returns t with its derived Blocks filled from all.
func WithBlocks(t Task, all map[string]Task) Task {
	t.Blocks = nil
	for _, o := range all {
		if slices.Contains(o.BlockedBy, t.ID) {
			t.Blocks = append(t.Blocks, o.ID)
		}
	}
	slices.SortFunc(t.Blocks, CompareIDs)
	return t
}

// OpenBlockers returns the tasks t waits for that are not completed, in id order. A blocker
// that no longer exists does not block.
func OpenBlockers(t Task, all map[string]Task) []string {
	var open []string
	for _, id := range t.BlockedBy {
		if b, ok := all[id]; ok && b.Status != StatusCompleted {
			open = append(open, id)
		}
	}
	slices.SortFunc(open, CompareIDs)
	return open
}

// LeaseLapsed reports whether t is in progress under a lease that has passed.
func LeaseLapsed(t Task, now time.Time) bool {
	return t.Status == StatusInProgress && !t.LeaseUntil.IsZero() && !now.Before(t.LeaseUntil)
}

// CanClaim says whether owner may claim t now, and if not, why, as an error wrapping
// [ErrCompleted], [ErrClaimed] or [ErrBlocked].
func CanClaim(t Task, all map[string]Task, owner string, now time.Time) error {
	switch {
	case t.Status == StatusCompleted:
		return fmt.Errorf("task %s is already completed: %w", t.ID, ErrCompleted)
	case t.Status == StatusInProgress && t.Owner != owner && !LeaseLapsed(t, now):
		if t.LeaseUntil.IsZero() {
			return fmt.Errorf("task %s is in progress, held by %s: %w", t.ID, ownerName(t.Owner), ErrClaimed)
		}
		return fmt.Errorf("task %s is in progress, held by %s until %s: %w", t.ID, ownerName(t.Owner), t.LeaseUntil.Format(time.TimeOnly), ErrClaimed)
	case t.Status == StatusPending && t.Owner != "" && t.Owner != owner:
		return fmt.Errorf("task %s is assigned to %s: %w", t.ID, t.Owner, ErrClaimed)
	}
	if open := OpenBlockers(t, all); len(open) > 0 {
		return fmt.Errorf("task %s is blocked by unfinished task(s) %s: %w", t.ID, strings.Join(open, ", "), ErrBlocked)
	}
	return nil
}

func ownerName(o string) string {
	if o == "" {
		return "nobody"
	}
	return o
}

// Claimed returns t claimed by owner under lease from now.
func Claimed(t Task, owner string, lease time.Duration, now time.Time) Task {
	t.Status, t.Owner = StatusInProgress, owner
	t.LeaseUntil = time.Time{}
	if lease > 0 {
		t.LeaseUntil = now.Add(lease)
	}
	return t
}

// NextClaim picks the task [Board.ClaimNext] claims for owner, or false.
func NextClaim(all map[string]Task, owner string, now time.Time) (Task, bool) {
	rank := func(t Task) int {
		switch {
		case t.Status == StatusInProgress && t.Owner == owner:
			return 0
		case t.Status == StatusPending && t.Owner == owner:
			return 1
		}
		return 2
	}
	var best *Task
	for _, t := range all {
		if CanClaim(t, all, owner, now) != nil {
			continue
		}
		if rank(t) == 2 && (Contested(t) || BackingOff(t, owner, now)) {
			continue
		}
		if best == nil || rank(t) < rank(*best) || (rank(t) == rank(*best) && CompareIDs(t.ID, best.ID) < 0) {
			best = &t
		}
	}
	if best == nil {
		return Task{}, false
	}
	return *best, true
}

// CheckNew validates a task about to be created with id.
func CheckNew(t Task, all map[string]Task) error {
	if strings.TrimSpace(t.Subject) == "" {
		return fmt.Errorf("create task: a subject is required: %w", ErrInvalid)
	}
	if t.Status != "" && !t.Status.Valid() {
		return fmt.Errorf("create task: status %q is not one of pending, in_progress, completed: %w", t.Status, ErrInvalid)
	}
	for _, b := range t.BlockedBy {
		if _, ok := all[b]; !ok {
			return fmt.Errorf("create task: blockedBy names task %s, which does not exist: %w", b, ErrNotFound)
		}
	}
	return nil
}

// Apply computes ch on task id over the snapshot all. It returns the tasks that changed
// (the task itself first, then others whose BlockedBy gained it), each with Revision and
// Updated advanced, or an error that changes nothing.
func Apply(all map[string]Task, id string, ch TaskChange, now time.Time) ([]Task, error) {
	t, ok := all[id]
	if !ok {
		return nil, fmt.Errorf("update task %s: %w", id, ErrNotFound)
	}
	if ch.IfOwner != nil && t.Owner != *ch.IfOwner {
		return nil, fmt.Errorf("update task %s: it is held by %s, not %s: %w", id, ownerName(t.Owner), ownerName(*ch.IfOwner), ErrNotOwner)
	}
	next := maps.Clone(all)
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&t.Subject, ch.Subject)
	set(&t.Description, ch.Description)
	set(&t.ActiveForm, ch.ActiveForm)
	set(&t.Owner, ch.Owner)
	if ch.Subject != nil && strings.TrimSpace(*ch.Subject) == "" {
		return nil, fmt.Errorf("update task %s: the subject cannot be empty: %w", id, ErrInvalid)
	}
	if ch.Status != nil {
		if !ch.Status.Valid() {
			return nil, fmt.Errorf("update task %s: status %q is not one of pending, in_progress, completed: %w", id, *ch.Status, ErrInvalid)
		}
		if *ch.Status != t.Status {
			t.Status = *ch.Status
			t.LeaseUntil = time.Time{}
		}
	}
	if ch.Owner != nil && *ch.Owner != all[id].Owner {
		t.LeaseUntil = time.Time{}
	}
	if len(ch.Metadata) > 0 {
		meta := maps.Clone(t.Metadata)
		if meta == nil {
			meta = map[string]json.RawMessage{}
		}
		for k, v := range ch.Metadata {
			if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
				delete(meta, k)
			} else {
				meta[k] = v
			}
		}
		if len(meta) == 0 {
			meta = nil
		}
		t.Metadata = meta
	}
	changed := map[string]bool{id: true}
	next[id] = t
	addEdge := func(waiter, blocker string) error {
		w, ok := next[waiter]
		if !ok {
			return fmt.Errorf("update task %s: task %s does not exist: %w", id, waiter, ErrNotFound)
		}
		if _, ok := next[blocker]; !ok {
			return fmt.Errorf("update task %s: task %s does not exist: %w", id, blocker, ErrNotFound)
		}
		if slices.Contains(w.BlockedBy, blocker) {
			return nil
		}
		if waiter == blocker || waitsFor(next, blocker, waiter) {
			return fmt.Errorf("update task %s: task %s waiting for task %s would close a loop (%s): %w",
				id, waiter, blocker, cyclePath(next, blocker, waiter), ErrCycle)
		}
		w.BlockedBy = append(slices.Clone(w.BlockedBy), blocker)
		slices.SortFunc(w.BlockedBy, CompareIDs)
		next[waiter] = w
		changed[waiter] = true
		return nil
	}
	for _, b := range ch.AddBlockedBy {
		if err := addEdge(id, b); err != nil {
			return nil, err
		}
	}
	for _, w := range ch.AddBlocks {
		if err := addEdge(w, id); err != nil {
			return nil, err
		}
	}
	out := []Task{}
	for _, cid := range append([]string{id}, sortedKeys(changed, id)...) {
		c := next[cid]
		c.Revision++
		c.Updated = now
		out = append(out, c)
	}
	return out, nil
}

func sortedKeys(m map[string]bool, skip string) []string {
	var ks []string
	for k := range m {
		if k != skip {
			ks = append(ks, k)
		}
	}
	slices.SortFunc(ks, CompareIDs)
	return ks
}

// waitsFor reports whether from (transitively) waits for to.
func waitsFor(all map[string]Task, from, to string) bool {
	seen := map[string]bool{}
	var walk func(string) bool
	walk = func(id string) bool {
		if id == to {
			return true
		}
		if seen[id] {
			return false
		}
		seen[id] = true
		return slices.ContainsFunc(all[id].BlockedBy, walk)
	}
	return walk(from)
}

// cyclePath renders the chain from → … → to of waiting tasks, for the error.
func cyclePath(all map[string]Task, from, to string) string {
	var path []string
	seen := map[string]bool{}
	var walk func(string) bool
	walk = func(id string) bool {
		path = append(path, id)
		if id == to {
			return true
		}
		if !seen[id] {
			seen[id] = true
			for _, b := range all[id].BlockedBy {
				if walk(b) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		return false
	}
	if !walk(from) {
		return from + " … " + to
	}
	return to + " → " + strings.Join(path, " → ")
}

// WithoutBlocker is t no longer blocked by the deleted task id, its revision bumped, or false
// when id did not block t.
func WithoutBlocker(t Task, id string, now time.Time) (Task, bool) {
	if !slices.Contains(t.BlockedBy, id) {
		return t, false
	}
	t.BlockedBy = slices.DeleteFunc(slices.Clone(t.BlockedBy), func(b string) bool { return b == id })
	if len(t.BlockedBy) == 0 {
		t.BlockedBy = nil
	}
	t.Revision++
	t.Updated = now
	return t, true
}
