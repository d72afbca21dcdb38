package shadow

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/atomicfile"
)

// Restored is what a [Repo.Restore] did.
type Restored struct {
	// Before is the directory as it was just before the restore: restoring it undoes the
	// restore.
	Before Checkpoint
	// Removed are the large files deleted because they did not exist at the checkpoint.
	Removed []string
	// NotRestored are the files the checkpoint left out for their size: they are as they
	// are now, not as they were.
	NotRestored []string
}

// Restore makes the working directory what it was at cp: every captured file with its bytes
// and mode, files created since deleted (large ones too), files deleted since back. Ignored
// files are left alone. The current state is captured first, so a restore can be undone.
func (r *Repo) Restore(ctx context.Context, cp Checkpoint) (Restored, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res, err := r.restore(ctx, cp)
	if err != nil {
		return res, fmt.Errorf("restore %s to checkpoint %s: %w", r.workTree, cp.Commit, err)
	}
	return res, nil
}

func (r *Repo) restore(ctx context.Context, cp Checkpoint) (Restored, error) {
	target, err := r.read(ctx, cp.Commit)
	if err != nil {
		return Restored{}, err
	}
	before, err := r.capture(ctx, "before restoring "+cp.Commit)
	if err != nil {
		return Restored{}, err
	}
	res := Restored{Before: before, NotRestored: target.Large}
	perms, err := r.permsOfChanged(ctx, target)
	if err != nil {
		return res, err
	}
	// A one-way merge from the index (which the capture made equal to the directory) to the
	// checkpoint: git rewrites the files that differ and deletes those the checkpoint lacks.
	r.indexTree = ""
	if _, err := r.git(ctx, nil, "read-tree", "--reset", "-u", target.Tree); err != nil {
		return res, err
	}
	r.indexTree = target.Tree
	if err := r.keepPerms(perms); err != nil {
		return res, err
	}
	if len(before.Large) == 0 {
		return res, nil
	}
	tracked, err := r.git(ctx, nil, "ls-files", "-z")
	if err != nil {
		return res, err
	}
	inTree := map[string]bool{}
	for p := range strings.SplitSeq(string(bytes.TrimSuffix(tracked, []byte{0})), "\x00") {
		inTree[p] = true
	}
	for _, p := range before.Large {
		if inTree[p] || slices.Contains(target.Large, p) {
			continue
		}
		// The checkpoint may have put a link where a directory on the way was (one a command
		// made in an earlier turn): the file is no longer in the tree, and what is at its path
		// now is outside, where nothing is removed.
		err := atomicfile.RemoveBeneath(r.workTree, filepath.FromSlash(p))
		if _, linked := errors.AsType[*atomicfile.LinkError](err); linked {
			continue
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return res, err
		}
		res.Removed = append(res.Removed, p)
		r.removeEmptyParents(p)
	}
	return res, nil
}

// permsOfChanged returns the permission bits of the regular files the restore to target
// will rewrite. git records only whether a file is executable and writes 0644 or 0755 (less
// the umask); a file that exists keeps the rest of its bits (a 0600 file edited by sed -i
// stays 0600), which keepPerms puts back.
func (r *Repo) permsOfChanged(ctx context.Context, target Checkpoint) (map[string]fs.FileMode, error) {
	out, err := r.git(ctx, nil, "diff-index", "--cached", "-z", "--name-only", "--no-renames", target.Tree)
	if err != nil {
		return nil, err
	}
	perms := map[string]fs.FileMode{}
	for p := range strings.SplitSeq(string(bytes.TrimSuffix(out, []byte{0})), "\x00") {
		if p == "" {
			continue
		}
		if st, err := os.Lstat(filepath.Join(r.workTree, filepath.FromSlash(p))); err == nil && st.Mode().IsRegular() {
			perms[p] = st.Mode().Perm()
		}
	}
	return perms, nil
}

// keepPerms gives the files git rewrote their earlier permission bits, where the earlier
// bits agree with the checkpoint on being executable.
func (r *Repo) keepPerms(perms map[string]fs.FileMode) error {
	for p, old := range perms {
		rel := filepath.FromSlash(p)
		st, err := os.Lstat(filepath.Join(r.workTree, rel))
		if err != nil || !st.Mode().IsRegular() {
			continue // deleted by the restore, or no longer a file
		}
		now := st.Mode().Perm()
		if now == old || (now&0o111 == 0) != (old&0o111 == 0) {
			continue
		}
		// Held below the work tree: where the checkpoint put a link on the way (one a command
		// made in an earlier turn), the Lstat above saw the file the link leads to, outside,
		// whose mode is not the restore's to change.
		err = atomicfile.ChmodBeneath(r.workTree, rel, old)
		if _, linked := errors.AsType[*atomicfile.LinkError](err); linked || errors.Is(err, atomicfile.ErrNotRegular) {
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// removeEmptyParents deletes the directories above p that its removal left empty, as git
// does for the files it deletes.
func (r *Repo) removeEmptyParents(p string) {
	for dir := filepath.Dir(filepath.FromSlash(p)); dir != "." && dir != string(filepath.Separator); dir = filepath.Dir(dir) {
		if os.Remove(filepath.Join(r.workTree, dir)) != nil {
			return
		}
	}
}

// Change is one file a diff names.
type Change struct {
	// Status is git's: A added, D deleted, M modified, T type changed (file, link).
	Status string `json:"status"`
	Path   string `json:"path"`
}

// Changes lists the files that differ between two checkpoints, in path order.
func (r *Repo) Changes(ctx context.Context, from, to Checkpoint) ([]Change, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out, err := r.git(ctx, nil, "diff-tree", "-r", "-z", "--no-renames", "--name-status", from.Tree, to.Tree)
	if err != nil {
		return nil, fmt.Errorf("changes between %s and %s: %w", from.Commit, to.Commit, err)
	}
	f := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	var cs []Change
	for i := 0; i+1 < len(f); i += 2 {
		cs = append(cs, Change{Status: f[i], Path: f[i+1]})
	}
	return cs, nil
}

// Diff is the patch from one checkpoint to another, as `git diff` prints it (binary files
// named, not shown): what a turn changed, for `keel rewind --diff`.
func (r *Repo) Diff(ctx context.Context, from, to Checkpoint) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out, err := r.git(ctx, nil, "diff-tree", "-r", "-p", "--no-color", "--no-ext-diff", "--no-textconv", "-M", from.Tree, to.Tree)
	if err != nil {
		return "", fmt.Errorf("diff between %s and %s: %w", from.Commit, to.Commit, err)
	}
	return string(out), nil
}
