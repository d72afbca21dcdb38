package memory

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/keel-dev/keel/internal/atomicfile"
	"github.com/keel-dev/keel/internal/lazy"
)

// candidate is a file discovery proposes; it may not exist.
type candidate struct {
	path string
	kind Kind
	rule bool
	base string // for rules: the directory globs are relative to
}

type loader struct {
	opts Options
	root string
	// seen holds the resolved paths already loaded (or refused), so a file reached twice —
	// by discovery and by an include, or through a symlink — appears once.
	seen     map[string]bool
	files    []File
	pending  []File
	warnings []Warning
	external []External
	excluded []Excluded
}

// refused says why path may not be read into the prompt ([Options.Refuse]), asked for the
// path as written and for real, its links resolved — the path [loader.read] then opens with
// no link allowed on the way; "" when it may.
func (l *loader) refused(path, real string) string {
	if l.opts.Refuse == nil {
		return ""
	}
	if why := l.opts.Refuse(path); why != "" {
		return why
	}
	if real != path {
		return l.opts.Refuse(real)
	}
	return ""
}

// refusedInclude says why from may not include target ([Options.RefuseInclude]), asked for
// target as written and as real, its links resolved; "" when it may.
func (l *loader) refusedInclude(from, target, real string) string {
	if l.opts.RefuseInclude == nil {
		return ""
	}
	if why := l.opts.RefuseInclude(from, target); why != "" {
		return why
	}
	if real != target {
		return l.opts.RefuseInclude(from, real)
	}
	return ""
}

// leavesProject reports whether a file of this kind, resolved to path, reaches outside the
// project root where that is not allowed (see [Options.ExternalIncludes]).
func (l *loader) leavesProject(kind Kind, path string) bool {
	if l.opts.ExternalIncludes || (kind != KindProject && kind != KindLocal) {
		return false
	}
	_, inside := within(canonical(l.root), canonical(path))
	return !inside
}

// findRoot returns the nearest directory from cwd upward that holds .git (a directory, or a
// file in a worktree), or cwd itself.
func findRoot(cwd string) string {
	for dir := cwd; ; {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return cwd
		}
		dir = parent
	}
}

// candidates lists every place a memory file may be, lowest priority first.
func (l *loader) candidates() []candidate {
	var out []candidate
	if l.opts.ManagedPath != "-" {
		out = append(out, candidate{path: l.opts.ManagedPath, kind: KindManaged})
	}
	if k := l.opts.KeelHome; k != "" {
		out = append(out, candidate{path: filepath.Join(k, "KEEL.md"), kind: KindUser})
		out = append(out, l.rules(filepath.Join(k, "rules"), KindUser, l.root)...)
	}
	if h := l.opts.Home; h != "" {
		out = append(out, candidate{path: filepath.Join(h, ".claude", "CLAUDE.md"), kind: KindUser})
		out = append(out, l.rules(filepath.Join(h, ".claude", "rules"), KindUser, l.root)...)
	}
	dirs := projectDirs(l.root, l.opts.Cwd)
	for _, d := range dirs {
		out = append(out,
			candidate{path: filepath.Join(d, "KEEL.md"), kind: KindProject},
			candidate{path: filepath.Join(d, ".keel", "KEEL.md"), kind: KindProject})
		out = append(out, l.rules(filepath.Join(d, ".keel", "rules"), KindProject, d)...)
		out = append(out,
			candidate{path: filepath.Join(d, "CLAUDE.md"), kind: KindProject},
			candidate{path: filepath.Join(d, ".claude", "CLAUDE.md"), kind: KindProject})
		out = append(out, l.rules(filepath.Join(d, ".claude", "rules"), KindProject, d)...)
		out = append(out, candidate{path: filepath.Join(d, "AGENTS.md"), kind: KindProject})
	}
	// Local private files come last, so they override everything checked in.
	for _, d := range dirs {
		out = append(out,
			candidate{path: filepath.Join(d, "KEEL.local.md"), kind: KindLocal},
			candidate{path: filepath.Join(d, "CLAUDE.local.md"), kind: KindLocal})
	}
	return out
}

// projectDirs lists root, then each directory down to cwd.
func projectDirs(root, cwd string) []string {
	var dirs []string
	for dir := cwd; ; dir = filepath.Dir(dir) {
		dirs = append(dirs, dir)
		if dir == root || filepath.Dir(dir) == dir {
			break
		}
	}
	slices.Reverse(dirs)
	return dirs
}

// rules lists the *.md files under dir, recursively, in lexical order.
func (l *loader) rules(dir string, kind Kind, base string) []candidate {
	var out []candidate
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == dir && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			l.warn(path, 0, fmt.Sprintf("read rules directory: %v", err))
			return nil
		}
		if !d.IsDir() && strings.EqualFold(filepath.Ext(path), ".md") {
			out = append(out, candidate{path: path, kind: kind, rule: true, base: base})
		}
		return nil
	})
	if err != nil {
		l.opts.Logger.Debug("walk rules", "dir", dir, "err", err)
	}
	return out
}

func (l *loader) warn(path string, line int, msg string) {
	l.warnings = append(l.warnings, Warning{Path: l.display(path), Line: line, Message: msg})
}

// loadCandidate reads one discovered file; a missing file is skipped silently.
func (l *loader) loadCandidate(c candidate) {
	if _, err := os.Stat(c.path); err == nil && l.leavesProject(c.kind, c.path) {
		l.external = append(l.external, External{From: l.display(c.path), Target: l.display(canonical(c.path))})
		return
	}
	real := canonical(c.path) // resolved once: what refused judges is what read opens
	if st, err := os.Stat(c.path); err == nil && st.Mode().IsRegular() && !l.seen[real] {
		if why := l.refused(c.path, real); why != "" {
			l.seen[real] = true
			l.excluded = append(l.excluded, Excluded{Target: l.display(c.path), Why: why})
			l.warn(c.path, 0, "is not loaded: "+why)
			return
		}
	}
	f, ok := l.read(c.path, real, c.kind, 0)
	if !ok {
		return
	}
	if c.rule {
		f.Rule = true
		f.base = c.base
		l.parseRule(&f)
		if len(f.Globs) > 0 {
			l.pending = append(l.pending, f)
			return
		}
	}
	l.expand(f, nil)
}

// expand appends f and, depth first, the files it includes.
func (l *loader) expand(f File, chain []string) {
	l.files = append(l.files, f)
	if len(chain) >= MaxIncludeDepth {
		if refs := findIncludes(f.Content); len(refs) > 0 {
			l.warn(f.Path, refs[0].Line, fmt.Sprintf("includes nested deeper than %d; not followed", MaxIncludeDepth))
		}
		return
	}
	next := append(slices.Clone(chain), f.Display)
	for _, ref := range findIncludes(f.Content) {
		target, ok := l.resolve(f.Path, ref.Raw)
		if !ok {
			continue
		}
		key := canonical(target)
		if l.seen[key] {
			if cyc := l.cycle(next, target); cyc != "" {
				l.warn(f.Path, ref.Line, "include cycle "+cyc+"; not followed")
			}
			continue
		}
		// key, resolved once, is what is judged here and what read opens (adversary11 F4).
		why := l.refused(target, key)
		if why == "" {
			why = l.refusedInclude(f.Path, target, key)
		}
		if why != "" {
			// Marked seen, so a file mentioned twice is reported once.
			l.seen[key] = true
			l.excluded = append(l.excluded, Excluded{From: f.Display, Line: ref.Line, Target: l.display(target), Why: why})
			l.warn(f.Path, ref.Line, fmt.Sprintf("@%s is not included: %s", ref.Raw, why))
			continue
		}
		if l.leavesProject(f.Kind, target) {
			l.external = append(l.external, External{From: f.Display, Line: ref.Line, Target: l.display(canonical(target))})
			continue
		}
		inc, ok := l.read(target, key, f.Kind, ref.Line)
		if !ok {
			continue
		}
		inc.Chain = next
		l.expand(inc, next)
	}
}

// cycle returns "a → b → a" when target is already on the include chain, else "".
func (l *loader) cycle(chain []string, target string) string {
	d := l.display(target)
	i := slices.Index(chain, d)
	if i < 0 {
		return ""
	}
	return strings.Join(append(slices.Clone(chain[i:]), d), " → ")
}

// resolve turns a mention into an existing regular file, or reports false so the mention
// stays plain text (an @handle, an e-mail-like word, a missing file).
func (l *loader) resolve(from, raw string) (string, bool) {
	if !looksLikePath(raw) {
		return "", false
	}
	for _, p := range candidatePaths(raw) {
		var path string
		switch {
		case strings.HasPrefix(p, "~/"):
			if l.opts.Home == "" {
				continue
			}
			path = filepath.Join(l.opts.Home, p[2:])
		case filepath.IsAbs(p):
			path = filepath.Clean(p)
		default:
			path = filepath.Join(filepath.Dir(from), filepath.FromSlash(p))
		}
		if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
			return path, true
		}
	}
	return "", false
}

func canonical(path string) string {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		return p
	}
	return filepath.Clean(path)
}

// read loads one file, path as found or written and real its links resolved (the path the
// caller checked); ok is false when it does not exist, was loaded already, or was refused
// (with a warning). line is the include's line, for the warning's context.
//
// real is opened with no link allowed on the way and never waiting on a FIFO
// ([atomicfile.OpenRegular]): keel reads it outside the sandbox, and a command in the
// background swapping the file for a link after the check would otherwise put a Read-denied
// or masked file into the prompt (adversary11 F4), or hang keel on a FIFO (F6).
func (l *loader) read(path, real string, kind Kind, line int) (File, bool) {
	path = filepath.Clean(path)
	key := real
	if l.seen[key] {
		return File{}, false
	}
	st, err := os.Lstat(real)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			l.warn(path, 0, fmt.Sprintf("read memory file: %v", err))
		}
		return File{}, false
	}
	if !st.Mode().IsRegular() {
		return File{}, false
	}
	l.seen[key] = true
	if ext := strings.ToLower(filepath.Ext(path)); ext != "" && !textExtensions.Get()[ext] {
		l.warn(path, 0, fmt.Sprintf("not a text file (%s); not included", ext))
		return File{}, false
	}
	fh, err := atomicfile.OpenRegular(real)
	if err != nil {
		l.warn(path, 0, fmt.Sprintf("read memory file: %v", err))
		return File{}, false
	}
	defer fh.Close()
	if st, err = fh.Stat(); err != nil {
		l.warn(path, 0, fmt.Sprintf("read memory file: %v", err))
		return File{}, false
	}
	limit := l.opts.MaxFileBytes
	data, err := io.ReadAll(io.LimitReader(fh, int64(limit)+1))
	if err != nil {
		l.warn(path, 0, fmt.Sprintf("read memory file: %v", err))
		return File{}, false
	}
	if isBinary(data) {
		l.warn(path, 0, "binary content; not included")
		return File{}, false
	}
	f := File{Path: path, Display: l.display(path), Kind: kind, Size: st.Size()}
	if len(data) > limit {
		data = cutAt(data, limit)
		f.Truncated = true
		l.warn(path, 0, fmt.Sprintf("is %d bytes; only the first %d are used", st.Size(), len(data)))
	}
	f.Content = string(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
	return f, true
}

// cutAt shortens data to at most limit bytes, at the last line end if there is one, and never
// inside a UTF-8 sequence.
func cutAt(data []byte, limit int) []byte {
	data = data[:limit]
	if i := bytes.LastIndexByte(data, '\n'); i > 0 {
		return data[:i+1]
	}
	for len(data) > 0 && !utf8.Valid(data[len(data)-min(len(data), 3):]) {
		data = data[:len(data)-1]
	}
	return data
}

// isBinary sniffs the first 8 KB: a NUL byte, or more than 10% invalid UTF-8, means binary.
func isBinary(data []byte) bool {
	head := data[:min(len(data), 8<<10)]
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	bad := 0
	for i := 0; i < len(head); {
		r, n := utf8.DecodeRune(head[i:])
		if r == utf8.RuneError && n == 1 {
			if len(head)-i < utf8.UTFMax && len(head) < len(data) {
				break // a sequence cut at the sniffing edge is no evidence
			}
			bad++
		}
		i += n
	}
	return bad*10 > len(head)
}

// display names path for people and the model without leaking machine-specific prefixes:
// relative to the working directory inside the project, "~/…" under home, else absolute.
func (l *loader) display(path string) string {
	if _, ok := within(l.root, path); ok {
		if r, err := filepath.Rel(l.opts.Cwd, path); err == nil {
			r = filepath.ToSlash(r)
			if !strings.HasPrefix(r, "../") {
				r = "./" + r
			}
			return r
		}
	}
	if h := l.opts.Home; h != "" {
		if rel, ok := within(h, path); ok {
			return "~/" + filepath.ToSlash(rel)
		}
	}
	return filepath.ToSlash(path)
}

// within reports whether path is dir or below it, with the relative part.
func within(dir, path string) (string, bool) {
	rel, err := filepath.Rel(dir, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

func totalWarning(files []File, limit int) (Warning, bool) {
	total := 0
	largest := -1
	for i, f := range files {
		n := utf8.RuneCountInString(f.Content)
		total += n
		if largest < 0 || n > utf8.RuneCountInString(files[largest].Content) {
			largest = i
		}
	}
	if total <= limit {
		return Warning{}, false
	}
	return Warning{Message: fmt.Sprintf(
		"memory files total %d characters, over %d; each request carries them (largest: %s, %d)",
		total, limit, files[largest].Display, utf8.RuneCountInString(files[largest].Content))}, true
}

// textExtensions are the file types an include may name. Anything else (images, archives,
// executables, PDFs) is refused with a warning: its bytes would be noise to the model. A
// file without an extension (Makefile, LICENSE) is allowed if its content is text.
var textExtensions = lazy.Value[map[string]bool]{New: func() map[string]bool {
	return map[string]bool{
		// prose and markup
		".md": true, ".markdown": true, ".mdx": true, ".txt": true, ".text": true, ".rst": true,
		".adoc": true, ".org": true, ".tex": true, ".html": true, ".htm": true, ".xml": true,
		".css": true, ".scss": true, ".less": true, ".svg": true,
		// data and configuration
		".json": true, ".jsonc": true, ".json5": true, ".jsonl": true, ".yaml": true, ".yml": true,
		".toml": true, ".ini": true, ".cfg": true, ".conf": true, ".properties": true, ".env": true,
		".csv": true, ".tsv": true, ".proto": true, ".graphql": true, ".gql": true, ".sql": true,
		".tf": true, ".hcl": true, ".nix": true, ".lock": true, ".mod": true, ".sum": true,
		// source code
		".go": true, ".py": true, ".pyi": true, ".rb": true, ".rs": true, ".java": true, ".kt": true,
		".kts": true, ".scala": true, ".groovy": true, ".gradle": true, ".c": true, ".h": true,
		".cc": true, ".cpp": true, ".cxx": true, ".hpp": true, ".hh": true, ".m": true, ".mm": true,
		".cs": true, ".fs": true, ".swift": true, ".dart": true, ".js": true, ".mjs": true,
		".cjs": true, ".jsx": true, ".ts": true, ".mts": true, ".cts": true, ".tsx": true,
		".vue": true, ".svelte": true, ".astro": true, ".php": true, ".pl": true, ".pm": true,
		".lua": true, ".r": true, ".jl": true, ".ex": true, ".exs": true, ".erl": true, ".hrl": true,
		".hs": true, ".ml": true, ".mli": true, ".clj": true, ".cljs": true, ".elm": true,
		".zig": true, ".nim": true, ".v": true, ".sol": true,
		// scripts and build files
		".sh": true, ".bash": true, ".zsh": true, ".fish": true, ".ps1": true, ".bat": true,
		".cmd": true, ".mk": true, ".cmake": true, ".dockerfile": true, ".gitignore": true,
		".editorconfig": true,
	}
}}
