package undo

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/keel-dev/keel/internal/shadow"
)

// Warm makes the directory's first capture in the background as the session opens: on a
// large directory with no earlier session's index to start from, hashing every file takes
// seconds (4.2 s for 10,000 files on a loaded machine), which the first prompt would
// otherwise wait for; later captures hash only what changed. The prompt's capture waits for
// this one to finish, and Stop cancels it.
func (u *Undo) Warm() {
	dir := u.c.Cwd()
	if u.c.Offline || !u.shadowOn(dir) {
		return // a maintenance session (keel rewind) captures when it needs to
	}
	ctx, cancel := context.WithCancel(context.Background())
	u.shadow.stop = cancel
	u.shadow.warming.Go(func() {
		r, _, err := u.shadowRepo(ctx, dir)
		if err == nil {
			_, err = r.Capture(ctx, "session start")
		}
		if err != nil && ctx.Err() == nil {
			u.c.Logger.Warn("shadow capture at start", "dir", dir, "err", err)
		}
	})
}

// Stop cancels the first capture if it still runs and waits for it. A nil Undo has none.
func (u *Undo) Stop() {
	if u == nil {
		return
	}
	if u.shadow.stop != nil {
		u.shadow.stop()
	}
	u.shadow.warming.Wait()
}

// shadowOn says whether prompts are captured: the session keeps history (a keel directory
// and a file history) and dir is not the user's home or the root.
func (u *Undo) shadowOn(dir string) bool {
	if u.c.Home == "" || u.c.Files == nil {
		return false
	}
	clean := filepath.Clean(dir)
	return clean != filepath.Clean(u.c.UserHome) && clean != string(filepath.Separator)
}

// shadowRepo opens (once) the shadow repository of dir for this session.
func (u *Undo) shadowRepo(ctx context.Context, dir string) (*shadow.Repo, *shadow.Marks, error) {
	u.shadow.mu.Lock()
	defer u.shadow.mu.Unlock()
	if u.shadow.marks == nil {
		m, err := shadow.OpenMarks(u.c.Home, u.c.Session)
		if err != nil {
			return nil, nil, err
		}
		u.shadow.marks = m
	}
	if r, ok := u.shadow.repos[dir]; ok {
		return r, u.shadow.marks, nil
	}
	r, err := shadow.Open(ctx, dir, shadow.Options{Home: u.c.Home, Session: u.c.Session, Exclude: u.c.Exclude, Logger: u.c.Logger})
	if err != nil {
		return nil, nil, err
	}
	if u.shadow.repos == nil {
		u.shadow.repos = map[string]*shadow.Repo{}
	}
	u.shadow.repos[dir] = r
	return r, u.shadow.marks, nil
}

// captureTurn records the working directory as the prompt with transcript id uuid finds it,
// before the model acts: what a rewind to that prompt restores, whatever Edit, Write, Bash, a
// build or git change during the turn. A failure costs the undo of shell changes for this
// turn, not the turn: it is said once and logged.
func (u *Undo) captureTurn(ctx context.Context, uuid string) {
	dir := u.c.Cwd()
	if !u.shadowOn(dir) {
		return
	}
	err := func() error {
		r, marks, err := u.shadowRepo(ctx, dir)
		if err != nil {
			return err
		}
		cp, err := r.Capture(ctx, uuid)
		if err != nil {
			return err
		}
		return marks.Add(shadow.Mark{Prompt: uuid, Dir: r.WorkTree(), Commit: cp.Commit})
	}()
	if err == nil {
		return
	}
	u.c.Logger.Warn("shadow capture", "dir", dir, "err", err)
	u.shadow.mu.Lock()
	warned := u.shadow.warned
	u.shadow.warned = true
	u.shadow.mu.Unlock()
	if !warned {
		u.c.Warn(fmt.Sprintf("changes made by commands in %s cannot be rewound this session: %v", dir, err))
	}
}

// findMark returns the mark of the prompt uuid and the repository of its directory.
func (u *Undo) findMark(ctx context.Context, uuid string) (shadow.Mark, *shadow.Repo, []shadow.Mark, error) {
	if u.c.Home == "" {
		return shadow.Mark{}, nil, nil, errNoMark
	}
	marks, err := shadow.OpenMarks(u.c.Home, u.c.Session)
	if err != nil {
		return shadow.Mark{}, nil, nil, err
	}
	all, err := marks.All()
	if err != nil {
		return shadow.Mark{}, nil, nil, err
	}
	for _, m := range all {
		if m.Prompt == uuid {
			r, _, err := u.shadowRepo(ctx, m.Dir)
			return m, r, all, err
		}
	}
	return shadow.Mark{}, nil, nil, errNoMark
}

var errNoMark = errors.New("no shadow checkpoint")

// rewindShadow restores the directory of the prompt uuid to what it was when the prompt
// started; found is false when the prompt has no checkpoint (a session from before
// shadows, a directory not captured).
func (u *Undo) rewindShadow(ctx context.Context, uuid string) (res *ShadowRewind, found bool, err error) {
	m, r, _, err := u.findMark(ctx, uuid)
	if errors.Is(err, errNoMark) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	cp, err := r.Checkpoint(ctx, m.Commit)
	if err != nil {
		return nil, true, err
	}
	done, err := r.Restore(ctx, cp)
	if err != nil {
		return nil, true, err
	}
	return &ShadowRewind{Dir: m.Dir, Restored: done}, true, nil
}

// ShadowRewind is what a rewind restored from the shadow repository.
type ShadowRewind struct {
	// Dir is the directory restored, exactly as it was before the prompt (shell changes
	// included; ignored files left alone).
	Dir string
	shadow.Restored
}

// TurnDiff is the patch of what the turn that the prompt uuid started changed in its
// directory: from the prompt's checkpoint to the next prompt's in the same directory, or to
// the directory as it is now when it was the last (keel rewind --diff).
func (u *Undo) TurnDiff(ctx context.Context, uuid string) (string, error) {
	m, r, all, err := u.findMark(ctx, uuid)
	if errors.Is(err, errNoMark) {
		return "", fmt.Errorf("no checkpoint of prompt %s: the session did not capture its directory then", uuid)
	}
	if err != nil {
		return "", err
	}
	from, err := r.Checkpoint(ctx, m.Commit)
	if err != nil {
		return "", err
	}
	var to shadow.Checkpoint
	for i, n := range all {
		if n.Prompt != uuid {
			continue
		}
		for _, next := range all[i+1:] {
			if next.Dir == m.Dir {
				to, err = r.Checkpoint(ctx, next.Commit)
				break
			}
		}
		break
	}
	if err == nil && to.Commit == "" {
		to, err = r.Capture(ctx, "diff of "+uuid)
	}
	if err != nil {
		return "", err
	}
	return r.Diff(ctx, from, to)
}
