package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// What git reads inside a gitdir as configuration or as code to run, and so what a command
// must not write there: a later git run outside the sandbox would run what it planted.
//   - config, and config.worktree (read when config turns extensions.worktreeConfig on);
//   - commondir, which moves config and hooks to any directory it names;
//   - hooks/;
//   - the gitdirs of submodules (modules/…) and the admin directories of linked worktrees
//     (worktrees/…: commondir, gitdir, config.worktree), each protected as a gitdir.
//
// remotes/ and branches/ — git's older way of naming a remote, which a push or fetch to a name
// the configuration does not define follows — get no mount (most repositories have neither,
// and a placeholder per repository and command costs): what a command puts there is moved
// aside as it ends ([plantWatch]).
//
// objects/, refs/, logs/, index, HEAD and the lock files stay writable, so that git add,
// commit and checkout work inside.
var gitDirFiles = []string{"config", "config.worktree", "commondir", "hooks"}

// checkoutFiles are what else of a common directory decides what a checkout writes, read-only
// in a repository with read-only paths in its working tree ([Policy.protectCheckouts]):
//   - info/attributes, whose attributes change what checkout writes there (eol,
//     working-tree-encoding, ident, a filter the user's own configuration defines, such as
//     git-lfs's);
//   - objects/info/alternates and http-alternates, which add another object store, whose
//     objects of the same names may hold anything ([plantWatch.checkObjects] checks the
//     repository's own).
var checkoutFiles = []string{"info/attributes", "objects/info/alternates", "objects/info/http-alternates"}

// Bounds of the search for repositories below a writable root: directories visited, depth,
// repositories protected. Past any of them the policy carries a warning (doctor shows it).
const (
	maxRepoWalkDirs  = 20000
	maxRepoWalkDepth = 12
	maxNestedRepos   = 256
	// maxProtectedGitDirs bounds the gitdirs protected in all: the repositories' own and their
	// submodules' and linked worktrees' admin directories.
	maxProtectedGitDirs = 512
)

// gitDirInternals are the directories of a gitdir the search does not enter: git's own
// store, which holds no repository (modules/ and worktrees/ are followed by gitDir).
var gitDirInternals = []string{"objects", "refs", "logs", "info", "hooks", "modules", "worktrees", "lfs", "rr-cache"}

// repoWalkSkip are directories the search does not enter: package trees, which hold no
// repository a user runs git in.
var repoWalkSkip = []string{"node_modules"}

// gitGuard collects what protects the repositories of the writable roots: always-read-only
// paths, directories pinned (bound onto themselves, so that they cannot be renamed and a
// fresh one planted in their place) and warnings.
type gitGuard struct {
	readOnly, pinned, warnings []string
	seen                       map[string]bool
	skip                       []string
	// trees names, per gitdir found through a .git, the working tree it serves.
	trees map[string]string
	// unprotected are the gitdirs found past maxNestedRepos or maxProtectedGitDirs: not
	// protected, but known to be there; overflowed says the second bound was reached.
	unprotected []string
	overflowed  bool
	// unfollowable are the .git files and commondirs git would follow and keel cannot
	// (gitFileTarget): a command's are moved aside as it ends.
	unfollowable []string
	nestedConfig
}

// root protects the repository of writable root r (its .git, or r itself when r is a
// gitdir) and every repository found below it.
func (g *gitGuard) root(r string) {
	if isGitDir(r) {
		g.gitDir(r, r)
	}
	g.worktree(r, r, true)
	g.nested(r)
}

// worktree protects dir's .git: a directory is a gitdir; a file (a linked worktree's or a
// submodule's "gitdir: …") is itself read-only and its gitdir protected; a symbolic link has
// its target protected. An absent .git at a writable root (atRoot) is read-only too: a
// command cannot make the root a repository, or shadow the repository of a parent
// directory, with a configuration of its own.
func (g *gitGuard) worktree(dir, root string, atRoot bool) {
	dotGit := filepath.Join(dir, ".git")
	fi, err := os.Lstat(dotGit)
	if err == nil && isPlaceholder(dotGit, fi) {
		err = fs.ErrNotExist // another keel's placeholder (a teammate's workspace beside this one): no repository
	}
	switch {
	case err != nil:
		if atRoot {
			g.readOnly = append(g.readOnly, dotGit)
		}
	default:
		if fi.Mode().IsRegular() {
			g.readOnly = append(g.readOnly, dotGit)
			g.pin(dir, root)
		}
		target, unfollowable := dotGitTarget(dotGit)
		if unfollowable {
			g.unfollowable = append(g.unfollowable, dotGit)
		}
		if target != "" {
			g.trees[target] = dir
			g.gitDir(target, root)
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			return
		}
		g.warnings = append(g.warnings, fmt.Sprintf("%s is a symbolic link: its gitdir's configuration and hooks are read-only, but a command can replace the link itself", dotGit))
	}
}

// gitDir protects gitdir d: its configuration and hooks (or, for a linked worktree's admin
// directory, its commondir and the common directory it names), its submodules' gitdirs and
// its linked worktrees' admin directories.
func (g *gitGuard) gitDir(d, root string) {
	if g.seen[d] || slices.Contains(g.unprotected, d) {
		return
	}
	if len(g.seen) >= maxProtectedGitDirs {
		// Each costs mounts, and a command can make thousands (in .git/modules): past the
		// bound they are found, not protected — and disarmed when a command changes them.
		if !g.overflowed {
			g.overflowed = true
			g.warnings = append(g.warnings, fmt.Sprintf("more than %d gitdirs below %s: those past them may have writable git configuration", maxProtectedGitDirs, root))
		}
		g.unprotected = append(g.unprotected, d)
		return
	}
	g.seen[d] = true
	g.pin(d, root)
	c, ok, unfollowable := readCommonDir(d)
	if unfollowable {
		g.unfollowable = append(g.unfollowable, filepath.Join(d, "commondir"))
	}
	if ok {
		for _, n := range []string{"commondir", "gitdir", "config.worktree"} {
			g.readOnly = append(g.readOnly, filepath.Join(d, n))
		}
		// A linked worktree's admin directory names the worktree's .git in its gitdir file.
		if b, _ := readGitPointer(filepath.Join(d, "gitdir")); len(b) > 0 && g.trees[d] == "" {
			if wt, viaProcess := resolveGitPath(d, string(b)); !viaProcess {
				g.trees[d] = filepath.Dir(wt)
			}
		}
		if c != d {
			g.gitDir(c, root)
		}
	} else {
		for _, n := range gitDirFiles {
			g.readOnly = append(g.readOnly, filepath.Join(d, n))
		}
	}
	if entries, err := os.ReadDir(filepath.Join(d, "worktrees")); err == nil {
		for _, e := range entries {
			if e.IsDir() {
				g.gitDir(filepath.Join(d, "worktrees", e.Name()), root)
			}
		}
	}
	g.modules(filepath.Join(d, "modules"), root, 0)
}

// modules protects the submodules' gitdirs under dir, a gitdir's modules/ (names may hold
// slashes, so a directory that is no gitdir is searched further).
func (g *gitGuard) modules(dir, root string, depth int) {
	entries, err := os.ReadDir(dir)
	if err != nil || depth > maxRepoWalkDepth {
		return
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		sub := filepath.Join(dir, e.Name())
		if isGitDir(sub) {
			g.gitDir(sub, root)
		} else {
			g.modules(sub, root, depth+1)
		}
	}
}

// nested finds the repositories below root, bounded, and protects each like root's own.
func (g *gitGuard) nested(root string) {
	dirs, repos := 0, 0
	var walk func(dir string, depth int) bool
	walk = func(dir string, depth int) bool {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrPermission) {
			// git needs only to pass through a directory to find a repository below it.
			g.warnings = append(g.warnings, fmt.Sprintf("keel cannot list %s, so a repository below it may have writable git configuration", dir))
			g.unlisted = append(g.unlisted, dir)
		}
		if err != nil {
			return true
		}
		if dirs++; dirs > maxRepoWalkDirs {
			g.warnings = append(g.warnings, fmt.Sprintf("the search for repositories in %s stopped after %d directories: a repository below those may have writable git configuration", root, maxRepoWalkDirs))
			g.stopped = true
			return false
		}
		// Read from the listing in hand: no system call per directory beyond the ReadDir.
		gitDir := gitDirListing(entries)
		g.projectConfig(dir, root, entries)
		if dir != root && (gitDir || slices.ContainsFunc(entries, func(e os.DirEntry) bool { return e.Name() == ".git" })) {
			switch repos++; {
			case repos <= maxNestedRepos:
				if gitDir {
					g.gitDir(dir, root)
				}
				g.worktree(dir, root, false)
			case repos == maxNestedRepos+1:
				g.warnings = append(g.warnings, fmt.Sprintf("%s holds more than %d repositories: those past them may have writable git configuration", root, maxNestedRepos))
				fallthrough
			default:
				// Past the bound the search goes on, finding what it no longer protects: a
				// command's repositories there are still disarmed as it ends.
				if gitDir {
					g.unprotected = append(g.unprotected, dir)
				} else if d, unfollowable := dotGitTarget(filepath.Join(dir, ".git")); d != "" {
					g.unprotected = append(g.unprotected, d)
					g.trees[d] = dir
				} else if unfollowable {
					g.unfollowable = append(g.unfollowable, filepath.Join(dir, ".git"))
				}
			}
		}
		for _, e := range entries {
			if !e.IsDir() || e.Name() == ".git" || slices.Contains(repoWalkSkip, e.Name()) {
				continue
			}
			// A gitdir's own directories hold no repository git would find; the rest of a
			// directory that merely looks like one (HEAD, objects/, refs/ made beside a
			// project's files) is searched like any other.
			if gitDir && slices.Contains(gitDirInternals, e.Name()) {
				continue
			}
			sub := filepath.Join(dir, e.Name())
			if slices.Contains(g.skip, sub) {
				continue
			}
			if depth+1 > maxRepoWalkDepth {
				if hasSubdir(sub) {
					g.warnings = append(g.warnings, fmt.Sprintf("the search for repositories in %s stops %d directories deep (%s): a repository below may have writable git configuration", root, maxRepoWalkDepth, sub))
					g.stopped = true
					return false
				}
				continue
			}
			if !walk(sub, depth+1) {
				return false
			}
		}
		return true
	}
	walk(root, 0)
}

// hasSubdir reports whether dir holds a directory.
func hasSubdir(dir string) bool {
	entries, _ := os.ReadDir(dir)
	return slices.ContainsFunc(entries, func(e os.DirEntry) bool { return e.IsDir() })
}

// pin pins d and each directory between root and d, so that no step of the way to a
// protected gitdir can be renamed and replaced.
func (g *gitGuard) pin(d, root string) {
	for p := d; p != root && within(p, root); p = filepath.Dir(p) {
		g.pinned = append(g.pinned, p)
	}
	if !within(d, root) {
		g.pinned = append(g.pinned, d) // another root's, or outside every one (then read-only anyway)
	}
}

// maxGitPointer bounds what keel reads of a .git file or a commondir. git reads a .git file up
// to 1 MiB (refusing a larger one) and a commondir of any size; one larger than this keel
// does not follow, and says so (tooLarge): disarm then moves a commondir aside.
const maxGitPointer = 1 << 20

// readGitFile reads a .git file ("gitdir: …"), or what a .git link names, as git does:
// "gitdir: " exactly, the rest the path, relative to the .git's directory; "" when it is none
// or names it through /proc (see gitFileTarget).
func readGitFile(path string) string {
	target, _ := gitFileTarget(path)
	return target
}

// gitFileTarget is readGitFile's answer, and whether path is a .git file (or a link to one) git
// would follow that keel cannot: too large for keel, or naming its gitdir through /proc or
// /dev/fd, which git resolves from its own working directory.
func gitFileTarget(path string) (target string, unfollowable bool) {
	b, tooLarge := readGitPointer(path)
	if b == nil || tooLarge {
		return "", false // git refuses a larger one too
	}
	dir, ok := strings.CutPrefix(string(b), "gitdir: ")
	if !ok || dir == "" {
		return "", false
	}
	target, viaProcess := resolveGitPath(filepath.Dir(path), dir)
	if viaProcess {
		return "", true
	}
	return target, false
}

// dotGitTarget is the gitdir that dotGit — a directory, a .git file or a link to either —
// leads git to, and whether it is one git would follow and keel cannot (gitFileTarget).
func dotGitTarget(dotGit string) (gitDir string, unfollowable bool) {
	if fi, err := os.Lstat(dotGit); err != nil || isPlaceholder(dotGit, fi) {
		return "", false
	}
	real, viaProcess, _ := walkPath(dotGit)
	if viaProcess {
		return "", true
	}
	fi, err := os.Stat(real)
	switch {
	case err != nil:
		return "", false
	case fi.IsDir():
		return filepath.Clean(real), false
	}
	return gitFileTarget(dotGit)
}

// readCommonDir reads gitDir's commondir as git does and returns the directory it names
// (gitDir itself when it is empty); ok is false when there is no commondir keel can read,
// unfollowable when there is one keel cannot follow (too large, or through /proc).
func readCommonDir(gitDir string) (common string, ok, unfollowable bool) {
	b, tooLarge := readGitPointer(filepath.Join(gitDir, "commondir"))
	if b == nil {
		return gitDir, false, tooLarge
	}
	c, viaProcess := resolveGitPath(gitDir, string(b))
	if viaProcess {
		return gitDir, false, true
	}
	return c, true, false
}

// resolveGitPath is path p, relative to dir unless absolute, resolved as the kernel does when
// git opens it (walkPath); viaProcess when the way passes through /proc or /dev/fd, where
// what it names depends on the process.
func resolveGitPath(dir, p string) (string, bool) {
	if !filepath.IsAbs(p) {
		p = dir + string(filepath.Separator) + p
	}
	if processDependent(p) {
		return "", true
	}
	real, viaProcess, _ := walkPath(p)
	if viaProcess {
		return "", true
	}
	return filepath.Clean(real), false
}

// readGitPointer reads the regular file path as git reads a .git file or a commondir: the
// trailing line ends of the whole file trimmed, then the text up to its first NUL. nil when
// it is no regular file (a FIFO, on which a read would wait for ever, or a device, which a
// link could name, are not opened at all); tooLarge when it holds more than maxGitPointer
// bytes.
func readGitPointer(path string) ([]byte, bool) {
	b, err := readRegular(path, maxGitPointer)
	if err != nil {
		return nil, errors.Is(err, errTooLarge)
	}
	b = bytes.TrimRight(b, "\r\n")
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return b, false
}

// gitDirNames are what makes git take a directory for a repository: HEAD, objects/ and refs/
// (a bare repository, or a .git directory given as a root) — a configuration it does not
// need.
var gitDirNames = [...]string{"HEAD", "objects", "refs"}

// isGitDir reports whether git would take dir for a repository (gitDirNames, or HEAD and a
// commondir: git looks for objects/ and refs/ in the common directory).
func isGitDir(dir string) bool {
	entries, err := os.ReadDir(dir)
	return err == nil && gitDirListing(entries)
}

// gitDirListing is isGitDir of a directory whose listing is entries.
func gitDirListing(entries []os.DirEntry) bool {
	has := func(n string) bool {
		return slices.ContainsFunc(entries, func(e os.DirEntry) bool { return e.Name() == n })
	}
	if has("HEAD") && has("commondir") {
		return true
	}
	for _, n := range gitDirNames {
		if !has(n) {
			return false
		}
	}
	return true
}
