package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/keel-dev/keel/internal/gitexec"
)

// A command can make a repository anywhere under a writable root and add it to the index of
// a repository the sandbox protects, as a submodule (git init sub && git add sub): no mount
// can stand on a directory that does not exist yet, so the new repository's configuration is
// the command's to write, and git run later outside the sandbox in the protecting repository
// (git status, for one) enters the submodule and runs the programs that configuration names
// (core.fsmonitor). Mounts cannot close this; what keel can do is see it happen and say so.
// A plantWatch notes the index of every protected repository as a command starts and, as it
// is released, lists the submodules of each index that changed whose repository the sandbox
// did not protect when the command started.
type plantWatch struct {
	// index holds, per protected repository's working tree, its index file's state at start.
	index map[string]indexState
	found []string
}

// indexState is what tells an index file changed: git rewrites it whole, so an entry added
// changes its size and its modification time.
type indexState struct {
	size  int64
	mtime time.Time
}

// gitlinkMode is the index mode of a submodule's entry.
const gitlinkMode = "160000"

// plantCheckLimit bounds the git run that lists one index's submodules.
const plantCheckLimit = 10 * time.Second

// start notes the index of each protected repository with a working tree (a gitdir named
// .git): a stat each.
func (w *plantWatch) start(gitDirs []string) {
	w.index = map[string]indexState{}
	for _, d := range gitDirs {
		if filepath.Base(d) == ".git" {
			w.index[filepath.Dir(d)] = statIndex(d)
		}
	}
}

// finish lists, as sentences for the command's result, the submodules added to a protected
// repository whose own repository is unprotected; each is logged as a warning too.
func (w *plantWatch) finish(gitDirs []string) []string {
	// In order: the sentences go into the command's result, part of the next request.
	for _, tree := range slices.Sorted(maps.Keys(w.index)) {
		if statIndex(filepath.Join(tree, ".git")).same(w.index[tree]) {
			continue
		}
		for _, sub := range unprotectedSubmodules(tree, gitDirs) {
			msg := fmt.Sprintf("the command added %s to the repository at %s as a submodule, and its repository (%s) was made inside the sandbox: its git configuration may name programs that git, run outside the sandbox in %s, would start (git status enters submodules). Check %s, or take it out of the index with `git rm --cached %s`.",
				sub.path, tree, sub.gitDir, tree, filepath.Join(sub.gitDir, "config"), sub.path)
			slog.Warn("sandbox: a submodule was planted", "repository", tree, "submodule", sub.path, "gitdir", sub.gitDir)
			w.found = append(w.found, msg)
		}
	}
	w.index = nil
	return w.found
}

func (a indexState) same(b indexState) bool { return a.size == b.size && a.mtime.Equal(b.mtime) }

func statIndex(gitDir string) indexState {
	fi, err := os.Stat(filepath.Join(gitDir, "index"))
	if err != nil {
		return indexState{}
	}
	return indexState{size: fi.Size(), mtime: fi.ModTime()}
}

// submodule is one planted submodule: its path in the index and its repository.
type submodule struct{ path, gitDir string }

// unprotectedSubmodules lists the submodules in tree's index that are checked out (git enters
// only those) and whose repository is none of gitDirs. git runs as for an untrusted workspace
// (gitexec's zero Runner): reading the index runs nothing of the repository's.
func unprotectedSubmodules(tree string, gitDirs []string) []submodule {
	ctx, cancel := context.WithTimeout(context.Background(), plantCheckLimit)
	defer cancel()
	out, err := gitexec.Runner{}.Output(ctx, tree, "ls-files", "--stage", "-z")
	if err != nil {
		slog.Warn("sandbox: could not list the submodules of a repository a command changed", "repository", tree, "err", err)
		return nil
	}
	var subs []submodule
	for entry := range bytes.SplitSeq(out, []byte{0}) {
		// "<mode> <object> <stage>\t<path>"
		meta, path, ok := bytes.Cut(entry, []byte{'\t'})
		if !ok || !bytes.HasPrefix(meta, []byte(gitlinkMode+" ")) {
			continue
		}
		dotGit := filepath.Join(tree, string(path), ".git")
		gitDir := dotGit
		if fi, err := os.Lstat(dotGit); err != nil {
			continue
		} else if !fi.IsDir() {
			if gitDir = readGitFile(dotGit); gitDir == "" {
				continue
			}
		}
		if !slices.Contains(gitDirs, filepath.Clean(gitDir)) {
			subs = append(subs, submodule{path: string(path), gitDir: gitDir})
		}
	}
	return subs
}
