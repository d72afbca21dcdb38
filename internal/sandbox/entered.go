package sandbox

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
)

// Entered is told the directory a command's shell ended in, where the session runs its next
// commands — and, outside the sandbox, its status line and hooks, whose git would use the
// repository there. The search each release makes for repositories a command planted does
// not enter node_modules and stops at its bounds, so a command could make one there, cd into
// it, and have git outside run the core.fsmonitor it set — or make one in a toolchain cache and
// cd into keel's upper layer of its overlay, where it lands. So the repository git would find
// from dir is disarmed now, at this and at every later release while the session stays
// there, unless the sandbox protects it. It returns what it moved aside, as sentences for the
// command's result.
func (s *Sandbox) Entered(dir string) []string {
	if s == nil || s.landlockOnly || dir == "" {
		return nil // the Landlock-only form protects no repository, nor disarms one
	}
	s.disarmMu.Lock()
	defer s.disarmMu.Unlock()
	cwd := resolvePath(filepath.Clean(dir))
	if cwd == s.cwd {
		return nil // the release that just ended looked there already
	}
	s.cwd = cwd
	return s.disarmAtCwd(s.complete())
}

// disarmAtCwd disarms the repository git would find from the directory the session is in
// ([Sandbox.Entered]) when p does not protect it. Call with s.disarmMu held.
func (s *Sandbox) disarmAtCwd(p Policy) []string {
	if s.cwd == "" || !p.Enabled() {
		return nil
	}
	roots := p.landingRoots()
	gitDir, tree := discoverRepo(s.cwd, roots)
	if gitDir == "" {
		return nil
	}
	protected := func(d string) bool {
		_, ok := slices.BinarySearch(p.GitDirs, d)
		return ok
	}
	if protected(gitDir) {
		return nil
	}
	hooks := p.plantedHooks(gitDir, tree, protected)
	fp := gitFingerprint(gitDir) + hooksFingerprint(hooks)
	if fp == s.verified[gitDir] {
		return nil
	}
	said, ok := disarm(gitDir, roots, protected, hooks)
	if ok {
		s.verified[gitDir] = gitFingerprint(gitDir) + hooksFingerprint(hooks)
	}
	return said
}

// discoverRepo is the gitdir git run in dir would use, and its working tree ("" for a bare
// one), looking upward as git does while the directories are below one of roots (where a
// command's writes land: past them no command wrote anything). "" when it finds none there.
func discoverRepo(dir string, writable []string) (gitDir, tree string) {
	for d := dir; withinAny(d, writable); d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			if target, _ := dotGitTarget(filepath.Join(d, ".git")); target != "" {
				return target, d
			}
		}
		if isGitDir(d) {
			return filepath.Clean(d), ""
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	return "", ""
}

// Stranded says why dir, the directory a command's shell ended in, cannot be where the
// session runs its next commands, or "" when it can. A directory commands see but the host
// does not — in the command's private /tmp or /dev/shm, /dev, /proc, under a mask, or made in
// a cache's overlay — is not one the next command can start in (it starts on the host), and
// the hooks and status line, which run outside, would use the host's directory of that name.
// The writable roots and the read-only host paths are the same inside and out.
func (s *Sandbox) Stranded(dir string) string {
	if s == nil || dir == "" {
		return ""
	}
	p := s.Policy()
	if !p.Enabled() {
		return ""
	}
	d := filepath.Clean(dir)
	if runtime.GOOS == "linux" && !s.landlockOnly {
		if private := p.PrivateRoot(d); private != "" {
			return "each command has a " + private + " of its own, which the host does not share"
		}
	}
	if p.MaskedAt(d) {
		return "the sandbox masks it (" + p.Why(d) + ")"
	}
	if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
		return "there is no such directory outside the sandbox"
	}
	return ""
}
