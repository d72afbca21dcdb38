package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
// started after it protect those repositories like the others ([Sandbox.refresh]). In those
// and in the protected ones, the to-do list of a stopped rebase or cherry-pick the command
// wrote loses its exec lines ([disarmTodo]): no mount can protect it, since git writes it as
// it rebases inside. The same search finds the project configuration the command made where
// none was, which goes aside too ([plantWatch.refuseMade]).
type plantWatch struct {
	// known are the gitdirs protected when the command started, each with the identity of the
	// directory then — a path alone could lead elsewhere by the end (a link replaced, a parent
	// renamed); nil when the watch did not start (the Landlock-only form protects no
	// repository).
	known map[string]string
	// index holds, per protected gitdir with a working tree, its index file's state at start;
	// trees names that working tree.
	index map[string]indexState
	trees map[string]string
	// legacy holds, per protected gitdir, the state at start of remotes/ and branches/, which
	// no mount protects ([gitDirFiles]).
	legacy map[string]string
	// unprotected holds the gitFingerprint at start of each repository the search found past
	// those it protects: the user's, unless the command changes it.
	unprotected map[string]string
	// refs holds, per protected repository with read-only paths in its working tree
	// (guarded, relative to it), its refs at start ([plantWatch.noteRefs]).
	refs    map[string]refsMark
	guarded map[string][]string
	ops     map[string]string
	// todos holds the state at start of the to-do lists of a stopped rebase or cherry-pick
	// ([todoFiles]) in every gitdir the search found, keyed by path.
	todos map[string]string
	// objects are the object stores of the guarded repositories, each with one of them
	// ([plantWatch.noteObjects]).
	objects map[string]string
	// began is when the command started; config, readOnly and bins what its release compares
	// with to find the project configuration and the bins it made ([plantWatch.noteMade]).
	began    time.Time
	config   map[string]string
	readOnly []string
	bins     []string
	found    []string
}

// indexState is what tells an index file changed: its identity and change time, which no
// command can set back.
type indexState string

// gitlinkMode is the index mode of a submodule's entry.
const gitlinkMode = "160000"

// plantCheckLimit bounds the git run that lists one index's submodules.
const plantCheckLimit = 10 * time.Second

// start notes the repositories p, s's policy, protects that exist (and those past them), the
// index of each with a working tree, and their remotes/ and branches/: stats; s knows the
// watch until it finishes.
func (w *plantWatch) start(s *Sandbox, p Policy) {
	w.known = map[string]string{}
	w.index = map[string]indexState{}
	w.legacy = map[string]string{}
	w.trees = p.trees
	for _, d := range p.GitDirs {
		id := dirIdentity(d)
		if id == "" {
			continue // deleted since the search: one made in its place is the command's
		}
		w.known[d] = id
		if p.trees[d] != "" {
			w.index[d] = statIndex(d)
		}
		w.legacy[d] = legacyState(d)
	}
	w.todos = todoStates(p.GitDirs, p.unprotected)
	w.unprotected = map[string]string{}
	for _, d := range p.unprotected {
		w.unprotected[d] = gitFingerprint(d)
		if p.trees[d] != "" {
			w.index[d] = statIndex(d)
		}
	}
	w.noteRefs(s, p)
	w.noteObjects(s)
	w.noteLinks(s, p)
	w.noteMade(p)
	s.disarmMu.Lock()
	s.watches[w] = true
	s.disarmMu.Unlock()
}

// protects reports whether w's command ran with gitDir protected: it was then, and the path
// still leads to the same directory.
func (w *plantWatch) protects(gitDir string) bool {
	id, ok := w.known[gitDir]
	return ok && id == dirIdentity(gitDir)
}

// mayHaveChanged reports whether the command of w may have made or changed gitDir: it was
// not protected when the command started, and is not a repository past the protected ones
// that is as it was then.
func (w *plantWatch) mayHaveChanged(gitDir string) bool {
	if w.protects(gitDir) {
		return false
	}
	fp, ok := w.unprotected[gitDir]
	return !ok || fp != gitFingerprint(gitDir)
}

// finish disarms the repositories below the writable roots that s did not protect when the
// command started, and those it added to a protected repository's index as submodules
// (which may lie where the search does not go); it says, as sentences for the command's
// result, what it moved aside, each logged as a warning too. s protects from then on every
// repository the search found.
//
// A command still running (in the background) writes where it could when it started, which
// the commands started since may not: what it made is disarmed as each command is released,
// not only as it is, so it stays armed at most until the next command ends. A repository a
// watch does not know is checked at each release, found by the commands still running
// then: disarming one already disarmed changes nothing.
func (w *plantWatch) finish(s *Sandbox) {
	if w.known == nil {
		return
	}
	p := s.complete()
	g := p.searchRepos(p.gitRoots)
	s.disarmMu.Lock() // two runs released together may find the same repository
	defer s.disarmMu.Unlock()
	// One every running watch knows was protected wherever a command ran.
	protectedForAll := func(d string) bool {
		for o := range s.watches {
			if !o.protects(d) {
				return false
			}
		}
		return true
	}
	// In order: the sentences go into the command's result, part of the next request.
	for _, d := range slices.Sorted(maps.Keys(w.legacy)) {
		if legacyState(d) != w.legacy[d] {
			w.found = append(w.found, disarmLegacyRemotes(d, p.Writable)...)
		}
	}
	suspects, unfollowable := w.suspects(s, g)
	for _, ptr := range slices.Compact(slices.Sorted(slices.Values(unfollowable))) {
		if inWritable(ptr, p.Writable) {
			msg, _ := moveAsidePath(ptr, "names a repository git would find and keel cannot follow (through /proc or /dev/fd, which git resolves from its own working directory, or too large)")
			slog.Warn("sandbox: a command made a git pointer keel cannot follow", "what", msg)
			w.found = append(w.found, msg)
		}
	}
	for _, d := range slices.Sorted(maps.Keys(suspects)) {
		// One checked before and not changed since is not read again (a repository past the
		// search's bounds is a suspect at every release).
		hooks := p.plantedHooks(d, g.trees[d], protectedForAll)
		if fp := gitFingerprint(d) + hooksFingerprint(hooks); fp != s.verified[d] {
			said, ok := disarm(d, p.landingRoots(), protectedForAll, hooks)
			w.found = append(w.found, said...)
			if ok { // one keel could not disarm is tried again at the next release
				s.verified[d] = gitFingerprint(d) + hooksFingerprint(hooks)
			}
		}
	}
	w.found = append(w.found, s.disarmAtCwd(p)...) // where the search may not go
	// A stopped rebase's or cherry-pick's to-do list, in a gitdir protected or made: git writes
	// it inside, and continuing outside runs its exec lines.
	todoDirs := slices.Concat(slices.Collect(maps.Keys(w.known)), slices.Collect(maps.Keys(g.seen)), slices.Collect(maps.Keys(suspects)), g.unprotected)
	w.found = append(w.found, disarmTodos(s, slices.Compact(slices.Sorted(slices.Values(todoDirs))), p.Writable)...)
	w.found = append(w.found, restoreLinks(s.links)...)
	w.found = append(w.found, w.refuseMade(s, g, func(d string) bool { return suspects[d] || w.mayHaveChanged(d) })...)
	w.found = append(w.found, w.checkObjects(s)...) // before the refs, which git reads through them
	w.found = append(w.found, w.checkRefs(s)...)
	delete(s.watches, w)
	// Where this search could not go that the last one could, the command's result says so:
	// a repository there is neither protected nor disarmed.
	refresh := false
	for _, warning := range g.warnings {
		if !slices.Contains(p.Warnings, warning) {
			w.found = append(w.found, warning)
			refresh = true
		}
	}
	for d := range g.seen {
		if _, ok := slices.BinarySearch(p.GitDirs, d); !ok {
			refresh = true
		}
	}
	// Project configuration found below the roots that the policy does not protect — the user's,
	// made since (what a command made is moved aside above) — is read-only from the next
	// command on, as it would be in the next session.
	for _, c := range g.config {
		if _, err := os.Lstat(c); err == nil && !slices.Contains(p.ReadOnly, resolvePath(c)) {
			refresh = true
		}
	}
	if refresh {
		s.refresh()
	}
	w.known, w.index, w.unprotected, w.legacy, w.todos, w.refs, w.guarded, w.ops, w.objects = nil, nil, nil, nil, nil, nil, nil, nil, nil
	w.config, w.readOnly, w.bins = nil, nil, nil
}

// suspects are the repositories a running command may have made or changed: of those the
// search g found, one a running watch did not know as it is now; of the submodules git enters
// from a protected repository — whose entry an earlier command may have added, and whose
// repository this one made where the search does not go — one w did not. Call with
// s.disarmMu held.
func (w *plantWatch) suspects(s *Sandbox, g gitGuard) (suspects map[string]bool, unfollowable []string) {
	suspects = map[string]bool{}
	unfollowable = slices.Clone(g.unfollowable)
	follow := func(tree, path string) string {
		d, bad := dotGitTarget(filepath.Join(tree, path, ".git"))
		if bad {
			unfollowable = append(unfollowable, filepath.Join(tree, path, ".git"))
		}
		return d
	}
	for o := range s.watches {
		for _, d := range slices.Concat(slices.Collect(maps.Keys(g.seen)), g.unprotected) {
			if o.mayHaveChanged(d) {
				suspects[d] = true
			}
		}
	}
	for gitDir, st := range w.index {
		tree := w.trees[gitDir]
		if _, listed := s.gitlinks[gitDir]; !listed || statIndex(gitDir) != st {
			s.gitlinks[gitDir] = listGitlinks(gitDir)
		}
		for _, path := range s.gitlinks[gitDir] {
			if d := follow(tree, path); d != "" && w.mayHaveChanged(d) {
				suspects[d] = true
			}
		}
	}
	// git enters the submodules of a repository the command made too, and theirs.
	queue := slices.Collect(maps.Keys(suspects))
	for checked := 0; len(queue) > 0 && checked < maxSubmoduleChase; checked++ {
		gitDir := queue[0]
		queue = queue[1:]
		tree := g.trees[gitDir]
		if tree == "" {
			continue
		}
		for _, path := range listGitlinks(gitDir) {
			if d := follow(tree, path); d != "" && !suspects[d] && w.mayHaveChanged(d) {
				suspects[d] = true
				queue = append(queue, d)
			}
		}
	}
	return suspects, unfollowable
}

// maxSubmoduleChase bounds the repositories whose submodules one release follows.
const maxSubmoduleChase = 4096

// statIndex is the state of gitDir's index (through a link, as git reads it); "" when it has
// none.
func statIndex(gitDir string) indexState {
	fi, err := os.Stat(filepath.Join(gitDir, "index"))
	if err != nil {
		return ""
	}
	return indexState(fmt.Sprintf("%d %s", fi.Size(), fileIdentity(fi)))
}

// dirIdentity is the identity of the directory path leads to (device and inode); "" when
// there is none.
func dirIdentity(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	return fileInode(fi)
}

// legacyState is the state of gitDir's remotes/ and branches/ and of what they hold.
func legacyState(gitDir string) string {
	var b strings.Builder
	for _, n := range legacyRemoteDirs {
		b.WriteString(statDir(filepath.Join(gitDir, n)))
	}
	return b.String()
}

// listGitlinks lists the paths of the submodules in gitDir's index. git reads the index through
// GIT_INDEX_FILE in an empty repository of keel's making, so that nothing of the repository's
// own configuration — which a command may have written, and which could keep gitexec from
// running git at all — takes part; the shared index files of a split index are linked beside.
func listGitlinks(gitDir string) []string {
	index := filepath.Join(gitDir, "index")
	// git follows a link; a FIFO it would wait on.
	if fi, err := os.Stat(index); err != nil || !fi.Mode().IsRegular() {
		return []string{}
	}
	empty, err := emptyGitDir(gitDir)
	if err != nil {
		slog.Warn("sandbox: could not list the submodules of a repository", "gitdir", gitDir, "err", err)
		return nil
	}
	defer os.RemoveAll(empty)
	ctx, cancel := context.WithTimeout(context.Background(), plantCheckLimit)
	defer cancel()
	r := gitexec.Runner{Env: append(os.Environ(), "GIT_INDEX_FILE="+index)}
	out, err := r.Output(ctx, empty, "--git-dir="+empty, "ls-files", "--stage", "-z")
	if err != nil {
		slog.Warn("sandbox: could not list the submodules of a repository", "gitdir", gitDir, "err", err)
		return nil
	}
	paths := []string{}
	for entry := range bytes.SplitSeq(out, []byte{0}) {
		// "<mode> <object> <stage>\t<path>"
		meta, path, ok := bytes.Cut(entry, []byte{'\t'})
		if ok && bytes.HasPrefix(meta, []byte(gitlinkMode+" ")) {
			paths = append(paths, string(path))
		}
	}
	return paths
}

// emptyGitDir makes a repository with nothing in it but what git needs to take it for one,
// and links to gitDir's shared index files, for listGitlinks.
func emptyGitDir(gitDir string) (string, error) {
	dir, err := os.MkdirTemp("", "keel-index-")
	if err != nil {
		return "", err
	}
	err = errors.Join(os.Mkdir(filepath.Join(dir, "objects"), 0o700), os.Mkdir(filepath.Join(dir, "refs"), 0o700),
		os.WriteFile(filepath.Join(dir, "HEAD"), []byte("ref: refs/heads/main\n"), 0o600))
	shared, _ := filepath.Glob(filepath.Join(gitDir, "sharedindex.*"))
	for _, f := range shared {
		err = errors.Join(err, os.Symlink(f, filepath.Join(dir, filepath.Base(f))))
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// gitFingerprint identifies the state of what disarm looks at in gitDir — its common
// directory's config and hooks, its config.worktree, each hook — by each one's identity,
// size and times: writing any of them, or moving another in, changes the change time or the
// identity, which no command can set back.
func gitFingerprint(gitDir string) string {
	common, _, _ := readCommonDir(gitDir)
	return statString(filepath.Join(common, "config")) + statString(filepath.Join(gitDir, "config.worktree")) +
		statDir(filepath.Join(common, "hooks"))
}

// statDir is statString of dir and of each entry in it.
func statDir(dir string) string {
	var b strings.Builder
	b.WriteString(statString(dir))
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		b.WriteString(statString(filepath.Join(dir, e.Name())))
	}
	return b.String()
}

// statString is path's identity, size, mode and times, for fingerprints.
func statString(path string) string {
	fi, err := os.Lstat(path)
	if err != nil {
		return "-|"
	}
	return fmt.Sprintf("%s %d %d %d %s|", path, fi.Size(), fi.Mode(), fi.ModTime().UnixNano(), fileIdentity(fi))
}
