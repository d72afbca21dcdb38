package sandbox

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/gitexec"
)

// A protected repository's objects, refs and index stay writable, so that git commit, branch
// and add work inside. So a command can leave a branch, or an index entry, whose version of a
// path keel keeps read-only in the working tree (.claude/, .mcp.json, .gitmodules, …) is not
// the one there: the user's next git switch, merge, reset or restore, outside the sandbox,
// writes it. keel cannot take such a commit back without taking the user's work too (a commit
// of an approved change to .claude/ looks the same), so it tells: as the command is released,
// every ref it changed and the index, if it changed, are compared with the working tree on
// those paths, and each difference is said in the command's result.

// refsMark is what a repository's refs were: a fingerprint of the files that hold them and,
// read by git, each ref's object.
type refsMark struct {
	fp   string
	refs map[string]string
	// headLog is HEAD's reflog as it was ([readHeadLog]).
	headLog headLog
}

// maxRefsChecked bounds the refs one release compares with the working tree.
const maxRefsChecked = 32

// noteRefs records, for each protected repository with a working tree and read-only paths
// in it, its refs as the command starts: read by git only when their files changed since
// the sandbox last read them.
func (w *plantWatch) noteRefs(s *Sandbox, p Policy) {
	w.refs = map[string]refsMark{}
	w.guarded = map[string][]string{}
	w.ops = map[string]string{}
	for _, d := range p.GitDirs {
		tree := p.trees[d]
		if tree == "" {
			continue
		}
		paths := guardedPaths(tree, p)
		if len(paths) == 0 {
			continue
		}
		w.guarded[d] = paths
		w.ops[d] = opsState(d)
		fp := refsFingerprint(d)
		s.disarmMu.Lock()
		seen, ok := s.refsSeen[d]
		s.disarmMu.Unlock()
		if !ok || seen.fp != fp {
			refs, err := readRefs(d)
			if err != nil {
				slog.Warn("sandbox: could not read a repository's refs", "gitdir", d, "err", err)
				continue
			}
			log, _ := readHeadLog(d, headLog{})
			seen = refsMark{fp: fp, refs: refs, headLog: log}
			s.disarmMu.Lock()
			s.refsSeen[d] = seen
			s.disarmMu.Unlock()
		}
		w.refs[d] = seen
	}
}

// checkRefs says, for each repository noteRefs recorded, which changed refs and whether the
// changed index would write a read-only path with other content than the working tree's.
// Call with s.disarmMu held.
func (w *plantWatch) checkRefs(s *Sandbox) []string {
	var said []string
	for _, d := range slices.Sorted(maps.Keys(w.guarded)) {
		tree, paths := w.trees[d], w.guarded[d]
		var found []string
		if before, ok := w.refs[d]; ok {
			if fp := refsFingerprint(d); fp != before.fp {
				refs, err := readRefs(d)
				if err != nil {
					slog.Warn("sandbox: could not read a repository's refs", "gitdir", d, "err", err)
				} else {
					log, rewrote := readHeadLog(d, before.headLog)
					s.refsSeen[d] = refsMark{fp: fp, refs: refs, headLog: log}
					changed, skipped := changedRefs(d, tree, paths, before.refs, refs, indexEntries(d, tree, paths))
					found = append(found, changed...)
					if rewrote {
						found = append(found, filepath.Join(d, "logs", "HEAD")+", whose entries the command rewrote rather than added to (git checkout -, @{-N} and HEAD@{N} read them; compare it with a backup, or git reflog, before using those outside)")
					}
					if skipped > 0 {
						said = append(said, fmt.Sprintf("In %s the command changed %d more refs than the %d keel compared with the working tree's read-only paths; those were not compared.",
							tree, skipped, maxRefsChecked))
					}
				}
			}
		}
		found = append(found, opsWriting(d, tree, paths, w.ops[d])...)
		if st, ok := w.index[d]; ok && st != statIndex(d) {
			entries := indexEntries(d, tree, paths)
			diff := differing(tree, paths, entries)
			if len(diff) > 0 {
				found = append(found, "the index (git restore, checkout or reset --hard would write, and the next commit would take, "+strings.Join(diff, ", ")+")")
			}
			if err := dropCachedTrees(d, tree, entries, diff); err != nil {
				slog.Warn("sandbox: could not drop the index's cached trees", "gitdir", d, "err", err)
				said = append(said, fmt.Sprintf("In %s keel could not drop the trees the index caches for the read-only paths (%v): the next commit there could record a version of them the index does not show; run git read-tree HEAD before committing outside the sandbox.", tree, err))
			}
		}
		if len(found) > 0 {
			msg := fmt.Sprintf("In %s the command left git state that would change paths keel keeps read-only, which hold something else in the working tree: %s. Look at it (git diff) before running those commands outside.",
				tree, strings.Join(found, "; "))
			slog.Warn("sandbox: a command left git state that would change read-only paths", "tree", tree, "what", found)
			said = append(said, msg)
		}
	}
	return said
}

// dropCachedTrees adds the index's entries under the read-only paths again as they are,
// which drops the trees the index caches on their way (its cache-tree): git's next commit
// takes a cached tree as it stands, without the entries below it, so a command could leave one
// holding another .claude/ than the entries — which neither git status nor the comparison
// above shows — and the user's next commit outside would record it. A conflicted path is left
// alone (adding it again would resolve it), and so is one the working tree does not hold as
// it is (in dirty: a file missing or changed, an intent-to-add entry or one a sparse checkout
// leaves out among them — which the index comparison names anyway). Each entry is then added from its file too, so that the index
// keeps the file's state and a plain git diff-index does not take it for changed.
func dropCachedTrees(gitDir, tree string, entries []treeEntry, dirty []string) error {
	conflicted := map[string]bool{}
	for _, e := range entries {
		if e.stage != "0" {
			conflicted[e.path] = true
		}
	}
	var b strings.Builder
	clean := []string{"update-index", "--"}
	for _, e := range entries {
		if conflicted[e.path] || slices.Contains(dirty, e.path) {
			continue
		}
		fmt.Fprintf(&b, "%s %s 0\t%s\x00", e.mode, e.oid, e.path)
		if e.mode != gitlinkMode {
			clean = append(clean, e.path)
		}
	}
	if b.Len() == 0 {
		return nil
	}
	update := func(stdin string, args ...string) error {
		ctx, cancel := context.WithTimeout(context.Background(), plantCheckLimit)
		defer cancel()
		cmd, err := gitexec.Runner{}.Command(ctx, tree, append([]string{"--git-dir=" + gitDir, "--work-tree=" + tree}, args...)...)
		if err != nil {
			return err
		}
		cmd.Stdin = strings.NewReader(stdin)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%w: %s", err, bytes.TrimSpace(out))
		}
		return nil
	}
	// --index-info adds each entry whatever its state; a path is added only when its file
	// is not as the index last saw it, which a forged index can make it seem.
	if err := update(b.String(), "update-index", "-z", "--index-info"); err != nil || len(clean) == 2 {
		return err
	}
	return update("", clean...)
}

// guardedPaths lists the read-only paths of p inside the working tree, relative to it, that
// git tracks: not the repository's own files.
func guardedPaths(tree string, p Policy) []string {
	var out []string
	for _, ro := range p.ReadOnly {
		if ro == tree || !within(ro, tree) {
			continue
		}
		rel, err := filepath.Rel(tree, ro)
		if err != nil || rel == ".git" || strings.HasPrefix(rel, ".git/") {
			continue
		}
		if withinAny(ro, p.GitDirs) {
			continue
		}
		out = append(out, filepath.ToSlash(rel))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// changedRefs names each ref that is new or moved, and what of paths it would write; skipped
// counts the changed refs past maxRefsChecked, which were not compared. HEAD, branches, the
// stash and tags come first: those are what a user switches to or restores from without
// fetching first.
//
// A reflog's entry (HEAD@{1}, main@{2}, stash@{0}) counts as changed when its object was not
// in that reflog before: an entry appended moves every older one down. @{-N}, what git
// checkout - takes from HEAD's reflog messages ([priorCheckouts]), counts as a ref. A replace ref the
// command made or moved is named whatever it replaces: git reads the object it names as
// another in every command, the user's checkout included, and keel's comparisons with it.
// Each object is compared once, whichever names lead to it.
func changedRefs(gitDir, tree string, paths []string, before, after map[string]string, tracked []treeEntry) (found []string, skipped int) {
	inLog := map[string]map[string]bool{}
	for name, oid := range before {
		if log, ok := reflogEntry(name); ok {
			if inLog[log] == nil {
				inLog[log] = map[string]bool{}
			}
			inLog[log][oid] = true
		}
	}
	var changed []string
	for name, oid := range after {
		if log, ok := reflogEntry(name); ok && !inLog[log][oid] || !ok && before[name] != oid {
			changed = append(changed, name)
		}
	}
	slices.SortFunc(changed, func(a, b string) int {
		return cmp.Or(cmp.Compare(refRank(a), refRank(b)), cmp.Compare(a, b))
	})
	what := map[string][]string{} // by object, what it would write
	for _, name := range changed {
		oid := after[name]
		if replaced, ok := strings.CutPrefix(name, "refs/replace/"); ok {
			found = append(found, fmt.Sprintf("%s (git reads object %s as %s in every command, a checkout outside included)", name, replaced, oid))
			continue
		}
		w, done := what[oid]
		if !done {
			if len(what) == maxRefsChecked {
				skipped++
				continue
			}
			w = refWrites(gitDir, tree, paths, oid, tracked)
			what[oid] = w
		}
		if len(w) > 0 && strings.HasPrefix(name, "@{-") {
			found = append(found, fmt.Sprintf("%s, named by HEAD's reflog (git checkout - or git switch %s %s)", name, name, strings.Join(w, " and ")))
		} else if len(w) > 0 {
			found = append(found, fmt.Sprintf("%s (git switch, checkout, merge or reset %s)", name, strings.Join(w, " and ")))
		}
	}
	return found, skipped
}

// refWrites says what a checkout of oid would do to paths that the working tree does not
// hold: "would write …", "would remove …".
func refWrites(gitDir, tree string, paths []string, oid string, tracked []treeEntry) []string {
	entries, err := gitEntries(gitDir, tree, append([]string{"ls-tree", "-r", "-z", oid + "^{tree}", "--"}, paths...)...)
	if err != nil {
		return nil // a ref to something other than a commit or tree
	}
	var what []string
	if diff := differing(tree, paths, entries); len(diff) > 0 {
		what = append(what, "would write "+strings.Join(diff, ", "))
	}
	if gone := removed(tree, tracked, entries); len(gone) > 0 {
		what = append(what, "would remove "+strings.Join(gone, ", "))
	}
	return what
}

func refRank(name string) int {
	switch {
	case name == "HEAD", strings.HasPrefix(name, "@{-"):
		return 0
	case strings.HasPrefix(name, "refs/replace/"):
		return 1
	case strings.HasPrefix(name, "refs/heads/"), name == "refs/stash":
		return 1
	case strings.HasPrefix(name, "refs/tags/"):
		return 2
	}
	return 3
}

// indexEntries lists the index entries under paths; nil when git cannot.
func indexEntries(gitDir, tree string, paths []string) []treeEntry {
	entries, err := gitEntries(gitDir, tree, append([]string{"ls-files", "--stage", "-z", "--"}, paths...)...)
	if err != nil {
		slog.Warn("sandbox: could not list a repository's index", "gitdir", gitDir, "err", err)
	}
	return entries
}

// removed lists the tracked files under the read-only paths, present in the working tree,
// that a checkout of entries would delete: a settings file whose deny rules go with it.
func removed(tree string, tracked, entries []treeEntry) []string {
	in := map[string]bool{}
	for _, e := range entries {
		in[e.path] = true
	}
	var out []string
	for _, e := range tracked {
		if e.mode == gitlinkMode || in[e.path] {
			continue
		}
		if _, err := os.Lstat(filepath.Join(tree, filepath.FromSlash(e.path))); err == nil {
			out = append(out, e.path)
		}
	}
	return out
}

// treeEntry is one file git lists: its mode, object and path relative to the working tree,
// and for an index entry its stage ("0" unless conflicted).
type treeEntry struct {
	mode, oid, path, stage string
}

// gitEntries runs git with args ([gitOutput]) and reads the entries it lists, from ls-tree
// ("<mode> <type> <oid>\t<path>") or ls-files --stage ("<mode> <oid> <stage>\t<path>").
func gitEntries(gitDir, tree string, args ...string) ([]treeEntry, error) {
	out, err := gitOutput(gitDir, tree, args...)
	if err != nil {
		return nil, err
	}
	var entries []treeEntry
	for rec := range bytes.SplitSeq(out, []byte{0}) {
		meta, path, ok := bytes.Cut(rec, []byte{'\t'})
		f := strings.Fields(string(meta))
		if !ok || len(f) != 3 {
			continue
		}
		e := treeEntry{mode: f[0], oid: f[2], path: string(path)} // ls-tree
		if args[0] == "ls-files" {
			e.oid, e.stage = f[1], f[2]
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// differing lists the entries under paths that are not what the working tree holds: a file
// missing there, or other content. Submodule entries are left to the submodule checks.
func differing(tree string, paths []string, entries []treeEntry) []string {
	var out []string
	for _, e := range entries {
		if e.mode == gitlinkMode || !withinAny(e.path, paths) {
			continue
		}
		if oid, ok := worktreeOID(filepath.Join(tree, filepath.FromSlash(e.path)), len(e.oid)); !ok || oid != e.oid {
			out = append(out, e.path)
		}
	}
	return out
}

// worktreeOID is the object id git would give the file at path as it is now (a link's target,
// a regular file's bytes, without filters), in the hash whose hex length is hexLen.
func worktreeOID(path string, hexLen int) (string, bool) {
	var h hash.Hash
	switch hexLen {
	case 2 * sha1.Size:
		h = sha1.New()
	case 2 * sha256.Size:
		h = sha256.New()
	default:
		return "", false
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return "", false
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		target, err := os.Readlink(path)
		if err != nil {
			return "", false
		}
		fmt.Fprintf(h, "blob %d\x00%s", len(target), target)
	case fi.Mode().IsRegular():
		f, err := openRegular(path)
		if err != nil {
			return "", false
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return "", false
		}
		fmt.Fprintf(h, "blob %d\x00", st.Size())
		if n, err := io.Copy(h, f); err != nil || n != st.Size() {
			return "", false
		}
	default:
		return "", false
	}
	return hex.EncodeToString(h.Sum(nil)), true
}

// pseudoRefs are the files outside refs/ that name a commit a user's plain git command takes
// — git reset --hard ORIG_HEAD, git merge FETCH_HEAD — and the stash's older entries, which
// live in its reflog (git stash pop pops them in turn).
var pseudoRefs = []string{"ORIG_HEAD", "FETCH_HEAD", "AUTO_MERGE"}

// readRefs lists the repository's refs and HEAD with their objects, the pseudo-refs
// (pseudoRefs) and the stash's entries (stash@{N}).
func readRefs(gitDir string) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), plantCheckLimit)
	defer cancel()
	out, err := gitexec.Runner{}.Output(ctx, gitDir, "--git-dir="+gitDir, "show-ref", "--head")
	refs := map[string]string{}
	for line := range strings.SplitSeq(string(out), "\n") {
		if oid, name, ok := strings.Cut(line, " "); ok {
			refs[name] = oid
		}
	}
	if err != nil && len(refs) > 0 {
		return nil, err
	}
	// show-ref fails, listing nothing, where there is no ref yet.
	common, _, _ := readCommonDir(gitDir)
	for _, name := range pseudoRefs {
		for i, oid := range headOIDs(filepath.Join(gitDir, name)) {
			refs[fmt.Sprintf("%s (line %d)", name, i+1)] = oid
		}
	}
	for i, oid := range reflogOIDs(filepath.Join(common, "logs", "refs", "stash")) {
		refs[fmt.Sprintf("stash@{%d}", i)] = oid
	}
	for i, oid := range priorCheckouts(gitDir) {
		if oid != "" {
			refs[fmt.Sprintf("@{-%d}", i+1)] = oid
		}
	}
	// The branches' and HEAD's older entries: git reset --hard @{1}, git switch main@{2}.
	for name, path := range branchReflogs(gitDir, common) {
		for i, oid := range reflogOIDs(path) {
			refs[fmt.Sprintf("%s@{%d}", name, i)] = oid
		}
	}
	return refs, nil
}

// branchReflogs are the reflogs of HEAD and of the branches, by the name git reads them
// with, bounded by maxRefFiles.
func branchReflogs(gitDir, common string) map[string]string {
	logs := map[string]string{}
	if fi, err := os.Lstat(filepath.Join(gitDir, "logs", "HEAD")); err == nil && fi.Mode().IsRegular() {
		logs["HEAD"] = filepath.Join(gitDir, "logs", "HEAD")
	}
	root := filepath.Join(common, "logs")
	_ = filepath.WalkDir(filepath.Join(root, "refs", "heads"), func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if len(logs) >= maxRefFiles {
			return filepath.SkipAll
		}
		logs[filepath.ToSlash(path[len(root)+1:])] = path
		return nil
	})
	return logs
}

// reflogEntry splits name, a reflog's entry (HEAD@{2}, stash@{0}), into the reflog's name.
func reflogEntry(name string) (string, bool) {
	log, n, ok := strings.Cut(name, "@{")
	return log, ok && strings.HasSuffix(n, "}") && isDigits(strings.TrimSuffix(n, "}"))
}

// maxReflogEntries bounds the entries of one reflog keel reads, newest first: git expires
// them after 90 days, and an older one is not what a user resets to.
const maxReflogEntries = 4096

// reflogOIDs are the new objects of a reflog's entries, newest first, at most
// maxReflogEntries: read from the end, "<old> <new> <who> <when>\t<message>" a line.
func reflogOIDs(path string) []string {
	b, err := readRegular(path, 64<<20)
	if err != nil {
		return nil
	}
	var out []string
	for len(b) > 0 && len(out) < maxReflogEntries {
		b = bytes.TrimRight(b, "\n")
		line := b[bytes.LastIndexByte(b, '\n')+1:]
		b = b[:len(b)-len(line)]
		if _, rest, ok := bytes.Cut(line, []byte{' '}); ok {
			if oid, _, ok := bytes.Cut(rest, []byte{' '}); ok && isHex(string(oid)) {
				out = append(out, string(oid))
			}
		}
	}
	return out
}

// maxRefFiles bounds the files refsFingerprint stats; past it every release reads the refs.
const maxRefFiles = 4096

// refsFingerprint identifies the state of the files that hold gitDir's refs: HEAD, the
// pseudo-refs, packed-refs, the stash's reflog, every file and directory below refs/ (a ref
// rewritten in place changes only its file) and reftable/.
func refsFingerprint(gitDir string) string {
	common, _, _ := readCommonDir(gitDir)
	var b strings.Builder
	for _, name := range append([]string{"HEAD"}, pseudoRefs...) {
		b.WriteString(statString(filepath.Join(gitDir, name)))
	}
	b.WriteString(statString(filepath.Join(common, "packed-refs")))
	b.WriteString(statString(filepath.Join(common, "logs", "refs", "stash")))
	b.WriteString(statString(filepath.Join(gitDir, "logs", "HEAD")))
	b.WriteString(statDir(filepath.Join(common, "reftable")))
	n := 0
	for _, dir := range []string{filepath.Join(common, "refs"), filepath.Join(common, "logs", "refs", "heads")} {
		_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if n++; n > maxRefFiles {
				b.WriteString(time.Now().String()) // too many to watch: read them every time
				return filepath.SkipAll
			}
			b.WriteString(statString(path))
			return nil
		})
	}
	return b.String()
}

// gitPaths runs git with args in the repository and reads the NUL-separated paths it lists.
func gitPaths(gitDir, tree string, args ...string) ([]string, error) {
	out, err := gitOutput(gitDir, tree, args...)
	if err != nil {
		return nil, err
	}
	var paths []string
	for p := range bytes.SplitSeq(out, []byte{0}) {
		if len(p) > 0 {
			paths = append(paths, string(p))
		}
	}
	return paths, nil
}

// gitOutput runs git with args (their paths taken literally) in the repository. The
// repository's configuration is protected, and gitexec leaves out whatever in it would start
// a program.
func gitOutput(gitDir, tree string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), plantCheckLimit)
	defer cancel()
	return gitexec.Runner{}.Output(ctx, tree, append([]string{"--literal-pathspecs", "--git-dir=" + gitDir, "--work-tree=" + tree}, args...)...)
}
