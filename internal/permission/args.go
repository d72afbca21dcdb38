package permission

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/keel-dev/keel/internal/toolpath"
)

// hasPathRestrictions reports whether a deny or ask path rule (Read, Edit or one of their
// tools) exists in pol or any ceiling over it: only then are a command's arguments resolved
// as paths.
func hasPathRestrictions(pol Policy) bool {
	for _, layer := range append([]Policy{pol}, pol.Ceilings...) {
		for _, r := range layer.Rules {
			if r.Behavior != Allow && r.path != nil {
				return true
			}
		}
	}
	return false
}

// Limits of what one line's file words are resolved to.
const (
	// maxCdBases caps the directories a relative argument is resolved against in a line that
	// changes directory.
	maxCdBases = 16
	// maxFileCandidates caps the paths one line's words are resolved to.
	maxFileCandidates = 4096
	// maxGlobWords caps the glob words one line expands against the filesystem.
	maxGlobWords = 64
)

// shellFiles is what a command line does with files, resolved.
type shellFiles struct {
	reads, writes []preparedPath
	// readTrees and writeTrees are directories whose every file the line may read or write;
	// repoTrees are repositories (or paths in them) whose history it reads.
	readTrees, writeTrees, repoTrees []preparedPath
	// trackedTrees are trees of which the line reads only what git tracks (git diff), with
	// the work tree they belong to.
	trackedTrees []trackedTree
	// redirectReads are the reads of input redirections alone (also in reads): outside the
	// working directories they need a Read allow rule.
	redirectReads []preparedPath
	// unresolved says why some file the line uses cannot be known: a word keel cannot expand
	// as bash would, a cd it cannot follow, names a program reads from elsewhere.
	unresolved string
}

type trackedTree struct {
	tree preparedPath
	root string
}

func (s *shellFiles) unknown(why string) {
	if s.unresolved == "" {
		s.unresolved = why
	}
}

// resolveFiles resolves the file words of a command line as bash would pass them and the
// program would take them: "~" expanded, globs expanded against the filesystem (bashGlob),
// relative paths against the cwd and every directory a cd in the line leads to, and the paths
// an argument may carry besides itself (derivedPaths).
func resolveFiles(a shellAnalysis, cwd, home string, resolve func(string) preparedPath) shellFiles {
	var out shellFiles
	bases := []string{cwd}
	for _, t := range a.cdTargets {
		for _, b := range bases {
			if len(bases) >= maxCdBases {
				out.unknown("more changes of directory than keel follows")
				break
			}
			bases = append(bases, toolpath.Resolve(t, b, home).Real)
		}
	}
	for _, why := range a.uses.unknowns {
		out.unknown(why)
	}
	n, globs := 0, 0
	trackedRoot := "" // the work tree of a tracked-files tree being added
	values := func(f wordFile, base string) []string {
		if f.glob {
			if globs++; globs > maxGlobWords {
				out.unknown("more globs than keel expands in one line")
				return nil
			}
		}
		vals, why := wordValues(f, base, home)
		if why != "" {
			out.unknown(why)
		}
		return vals
	}
	add := func(role fileRole, repo bool, p preparedPath) {
		if n++; n > maxFileCandidates {
			out.unknown("more paths than keel checks in one line")
			return
		}
		if repo && role&roleReadTree != 0 && role&roleWriteTree == 0 && trackedRoot != "" {
			out.reads = append(out.reads, p)
			out.trackedTrees = append(out.trackedTrees, trackedTree{p, trackedRoot})
			return
		}
		if role&roleRead != 0 {
			out.reads = append(out.reads, p)
		}
		if role&roleWrite != 0 {
			out.writes = append(out.writes, p)
		}
		if role&roleReadTree != 0 {
			if repo {
				out.repoTrees = append(out.repoTrees, p)
			} else {
				out.readTrees = append(out.readTrees, p)
			}
		}
		if role&roleWriteTree != 0 {
			out.writeTrees = append(out.writeTrees, p)
		}
	}
	for _, arg := range a.uses.args {
		trackedRoot = ""
		for _, base := range bases {
			if arg.tracked {
				trackedRoot = repoRoot(base)
			}
			for _, v := range values(arg.f, base) {
				if a.cdUnknown && !filepath.IsAbs(v) {
					out.unknown("a relative path after a cd keel cannot follow")
					continue
				}
				repo := arg.repo || arg.tracked
				for _, d := range derivedPaths(v) {
					if d == "." && repo {
						add(arg.role, true, resolve(repoRoot(base)))
						continue
					}
					add(arg.role, repo, resolve(joinBase(base, d)))
					if repo && d != v && !filepath.IsAbs(d) {
						// REV:path names a path from the repository's top.
						add(arg.role, repo, resolve(joinBase(repoRoot(base), d)))
					}
				}
			}
		}
	}
	for _, list := range []struct {
		in   []wordFile
		role fileRole
	}{{a.reads, roleRead}, {a.writes, roleWrite}} {
		for _, f := range list.in {
			for _, v := range values(f, cwd) {
				p := resolve(joinBase(cwd, v))
				add(list.role, false, p)
				if list.role == roleRead {
					out.redirectReads = append(out.redirectReads, p)
				}
			}
		}
	}
	return out
}

func joinBase(base, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return base + string(filepath.Separator) + p
}

// wordValues are the strings bash gives a word (relative ones relative to base): its value,
// or for a glob its matches and the word as written (what bash passes when nothing matches).
// why is set when the values are only guesses.
func wordValues(f wordFile, base, home string) (vals []string, why string) {
	if f.unresolved != "" {
		for _, g := range f.guesses {
			vals = append(vals, toolpath.Expand(g, home))
		}
		return vals, "an argument keel cannot resolve as bash would (" + f.unresolved + ")"
	}
	pat := f.pattern
	if f.tilde {
		h := home
		if h == "" {
			h, _ = os.UserHomeDir()
		}
		pat = quotePattern(h) + pat
	}
	vals = []string{toolpath.UnescapeGlob(pat)}
	if !f.glob {
		return vals, ""
	}
	matches, ok := bashGlob(pat, base)
	if !ok {
		return vals, "a glob keel cannot expand as bash would"
	}
	return append(vals, matches...), ""
}

// maxGluedSuffixes bounds the values a short-option cluster is read as.
const maxGluedSuffixes = 16

// derivedPaths are the paths an argument v may name: v itself, what follows its first "="
// (--output=FILE, of=FILE), a leading "@" (curl -d @FILE), the first ":" (git's REV:path,
// scp's host:path), and for a short-option cluster every tail past its first letter (-fFILE,
// -rfFILE), since which letters take a value differs by program.
func derivedPaths(v string) []string {
	out := []string{v}
	if i := strings.IndexByte(v, '='); i >= 0 {
		out = append(out, v[i+1:])
	}
	if rest, ok := strings.CutPrefix(v, "@"); ok {
		out = append(out, rest)
	}
	if i := strings.IndexByte(v, ':'); i > 0 && !strings.Contains(v[:i], "/") {
		out = append(out, v[i+1:])
	}
	if len(v) > 2 && v[0] == '-' && v[1] != '-' {
		for k := 2; k < len(v) && k < 2+maxGluedSuffixes; k++ {
			out = append(out, v[k:])
		}
	}
	kept := out[:0]
	for _, p := range out {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return kept
}

// repoRoot is the work tree holding dir: the nearest directory at or above it with a .git,
// or dir itself.
func repoRoot(dir string) string {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}
