package sandbox

import (
	"bytes"
	"context"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/keel-dev/keel/internal/gitexec"
)

// A command can make a repository anywhere under a writable root (git init sub, git clone, a
// bare repository's four entries): no mount can stand on a directory that does not exist
// yet, so the new repository's configuration and hooks are the command's to write, and git
// run there later outside the sandbox — by the user, or entering it as a submodule the
// command added to a protected repository's index — would run the programs they name
// (core.fsmonitor on every git status). Mounts cannot close this; keel closes it as the
// command is released, before anything outside can have run git there on the strength of
// it: a plantWatch notes the repositories the sandbox protects as a command starts; as it is
// released, it searches the writable roots again, as Complete did, and disarms every
// repository it finds that was not protected at the start — the configuration and hooks the
// command wrote that could start a program are moved aside ([disarm]) — and the commands
// started after it protect those repositories like the others ([Sandbox.refresh]).
type plantWatch struct {
	// since is when the command started, less the file systems' timestamp granularity: a
	// file changed since then may be the command's.
	since time.Time
	// known are the gitdirs protected when the command started; nil when the watch did not
	// start (the Landlock-only form protects no repository).
	known map[string]bool
	// index holds, per protected repository's working tree, its index file's state at start.
	index map[string]indexState
	found []string
}

// timestampSlack is how far before its start a file a command changed may be stamped: a
// coarse kernel clock lags by a tick, and some file systems keep whole seconds.
var timestampSlack = 2 * time.Second

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

// start notes the repositories p, s's policy, protects that exist, and the index of each
// with a working tree (a gitdir named .git): a stat each; s knows the watch until it finishes.
func (w *plantWatch) start(s *Sandbox, p Policy) {
	w.since = time.Now().Add(-timestampSlack)
	w.known = map[string]bool{}
	w.index = map[string]indexState{}
	for _, d := range p.GitDirs {
		if _, err := os.Lstat(d); err != nil {
			continue // deleted since the search: one made in its place is the command's
		}
		w.known[d] = true
		if filepath.Base(d) == ".git" {
			w.index[filepath.Dir(d)] = statIndex(d)
		}
	}
	s.disarmMu.Lock()
	s.watches[w] = true
	s.disarmMu.Unlock()
}

// finish disarms the repositories below the writable roots that s did not protect when the
// command started, and those it added to a protected repository's index as submodules
// (which may lie where the search does not go); it says, as sentences for the command's
// result, what it moved aside, each logged as a warning too. s protects from then on every
// repository the search found.
//
// A command still running (in the background) writes where it could when it started, which
// the commands started since may not: what it made is disarmed as each command is released,
// not only as it is, so it stays armed at most until the next command ends.
func (w *plantWatch) finish(s *Sandbox) {
	if w.known == nil {
		return
	}
	p := s.complete()
	g := p.searchRepos(p.gitRoots)
	s.disarmMu.Lock() // two runs released together may find the same repository
	defer s.disarmMu.Unlock()
	// Each suspect, with the start of the oldest running command that may have made it.
	suspects := map[string]time.Time{}
	suspect := func(d string, since time.Time) {
		if t, ok := suspects[d]; !ok || since.Before(t) {
			suspects[d] = since
		}
	}
	for o := range s.watches {
		for d := range g.seen {
			if !o.known[d] {
				suspect(d, o.since)
			}
		}
	}
	for tree, st := range w.index {
		if !statIndex(filepath.Join(tree, ".git")).same(st) {
			for _, d := range unprotectedSubmodules(tree, w.known) {
				suspect(d, w.since)
			}
		}
	}
	// In order: the sentences go into the command's result, part of the next request.
	for _, d := range slices.Sorted(maps.Keys(suspects)) {
		w.found = append(w.found, disarm(d, suspects[d])...)
	}
	delete(s.watches, w)
	for d := range g.seen {
		if _, ok := slices.BinarySearch(p.GitDirs, d); !ok {
			s.refresh()
			break
		}
	}
	w.known, w.index = nil, nil
}

func (a indexState) same(b indexState) bool { return a.size == b.size && a.mtime.Equal(b.mtime) }

func statIndex(gitDir string) indexState {
	fi, err := os.Stat(filepath.Join(gitDir, "index"))
	if err != nil {
		return indexState{}
	}
	return indexState{size: fi.Size(), mtime: fi.ModTime()}
}

// unprotectedSubmodules lists the repositories of the submodules in tree's index that are
// checked out (git enters only those) and not known. git runs as for an untrusted workspace
// (gitexec's zero Runner): reading the index runs nothing of the repository's.
func unprotectedSubmodules(tree string, known map[string]bool) []string {
	ctx, cancel := context.WithTimeout(context.Background(), plantCheckLimit)
	defer cancel()
	out, err := gitexec.Runner{}.Output(ctx, tree, "ls-files", "--stage", "-z")
	if err != nil {
		slog.Warn("sandbox: could not list the submodules of a repository a command changed", "repository", tree, "err", err)
		return nil
	}
	var gitDirs []string
	for entry := range bytes.SplitSeq(out, []byte{0}) {
		// "<mode> <object> <stage>\t<path>"
		meta, path, ok := bytes.Cut(entry, []byte{'\t'})
		if !ok || !bytes.HasPrefix(meta, []byte(gitlinkMode+" ")) {
			continue
		}
		// git follows a .git that is a symbolic link, and reads a .git file's "gitdir: …".
		dotGit := filepath.Join(tree, string(path), ".git")
		fi, err := os.Stat(dotGit)
		if err != nil {
			continue
		}
		gitDir := readGitFile(dotGit)
		if fi.IsDir() {
			gitDir, _ = filepath.EvalSymlinks(dotGit)
		}
		if gitDir != "" && !known[filepath.Clean(gitDir)] {
			gitDirs = append(gitDirs, filepath.Clean(gitDir))
		}
	}
	return gitDirs
}
