package sandbox

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/keel-dev/keel/internal/gitexec"
)

// A mask hides the working tree's file, but a file git tracks was also committed: its blobs
// sit in the repository's object store, which commands must read for git to work, so `git
// show HEAD:secrets/token`, `git log -p` or inflating the pack by hand would read it. So in
// each protected repository with masked paths in its working tree, keel finds the blobs
// committed at those paths — in every ref, reflog, index, pseudo-ref and operation's state
// ([hiddenBlobs], [stateObjects]) — and, in the
// commands' mount namespace only:
//   - covers the loose object of each with an unreadable empty file;
//   - binds over each pack holding one, and its index, a copy without them (git pack-objects
//     fed the pack's other objects: it makes no delta on a base it was not given), made once
//     per pack and set of blobs below keel's directory (sandbox/objects, read-only inside);
//   - covers what indexes the original packs by offset — their reverse indexes, bitmaps and
//     cruft mtimes, the multi-pack index and its bitmap — with unreadable empty files: git
//     opens none it cannot read (an empty one it reports, at every command), and works
//     without them;
//   - binds over objects/info/alternates a file that adds a store of keel's holding an
//     unreadable stand-in for each blob ([standIns]): git, which checks that the blobs of a
//     tree it writes exist without reading them, still commits beside a masked file.
//
// The blobs found are remembered per store ([rememberHidden]) and stay hidden after a
// command made them unreachable. A git command that needs such a blob then fails inside (git
// diff or checkout of that file, git gc or repack, which cannot read it either); status, log,
// commits and diffs of other files work. The walk starts only from what names an object
// ([walkTips]), so that a ref a command pointed at nothing does not stop it; where it still
// fails, or the blobs cannot be hidden for a reason a command can bring about — history it
// broke or made too long to walk, packs past maxFilterPackBytes, a pack index keel cannot
// read — the object store is masked whole for commands instead (git fails there; the
// session's notice and `keel doctor` say why and how to repair it): hiding only what was
// found before would show a version committed since. Past maxHiddenLoose loose objects to
// cover, their fan-out directories are masked whole ([coverLoose]). Where keel cannot hide
// them for a reason no command brings about — the Landlock-only form makes no mounts, no
// directory of keel's, a blob may sit in another store (objects/info/alternates) — nothing
// is hidden in that repository, and [Sandbox.HideObjects] says why: the notice and doctor
// name its files as readable through git. Blobs none of these reached when keel looked (a
// version added and replaced before a commit, a dropped stash whose reflog entry expired)
// are not found.

// maxFilterPackBytes bounds the packs of one repository keel copies without the hidden
// blobs: past it the object store is masked whole for commands. A test lowers it.
var maxFilterPackBytes int64 = 512 << 20

const (
	// objMaskLimit bounds the git commands that find the blobs and copy the packs of one
	// repository.
	objMaskLimit = 2 * time.Minute
	// maxHiddenLoose bounds the loose objects of hidden blobs covered one by one in one
	// repository: each is a mount, at every command. Past it their fan-out directories are
	// masked ([coverLoose]).
	maxHiddenLoose = 256
	// objStateKeep is how long a pack copy no command used is kept below keel's directory.
	objStateKeep = 7 * 24 * time.Hour
)

// emptyBlobs are the empty file's blob in SHA-1 and SHA-256 repositories: what a masked file
// committed empty holds, which every empty file shares and which hides nothing.
var emptyBlobs = []string{"e69de29bb2d1d6434b8b29ae775ad8c2e48c5391", "473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813"}

// objBind is a copy of keel's bound read-only over a file of an object store.
type objBind struct {
	Src  string `json:"src"`
	Dest string `json:"dest"`
}

// ObjectCover is what keel did about the masked files git tracks in one repository.
type ObjectCover struct {
	// Trees are the repository's working trees with masked paths.
	Trees []string
	// Blobs is how many blobs at masked paths are hidden from git inside the sandbox.
	Blobs int
	// Why, when not empty, says why none is: they stay readable through git inside.
	Why string
	// Sealed, when not empty, says why commands see the repository's object store masked
	// whole, its blobs hidden with all the others (git fails there), and how to repair it.
	Sealed string
}

// objRepo is one object store's hiding as last computed, by key ([maskedRepo.key]).
type objRepo struct {
	key                string
	trees              []string
	hidden             []string
	binds              []objBind
	unreadable, maskAs []string
	// why, when not empty, says why nothing is hidden: what no command can change (no
	// directory of keel's, a store named in objects/info/alternates, which is read-only
	// inside). sealed, when not empty, says why the object store is masked whole instead:
	// keel could not find or hide the blobs for a reason a command can bring about (a
	// history it broke, a pack it made too large or corrupt), and that must not show them.
	why, sealed string
	// history are the blobs found in the refs' history, kept while the refs stay as they are.
	history historyBlobs
}

// objMasks are the object stores' hidings, computed at a command's start when what they
// depend on changed. Its mutex keeps one computation at a time and guards repos.
type objMasks struct {
	mu    sync.Mutex
	repos map[string]*objRepo
}

// maskedRepo is one object store with masked paths in the working trees of its gitdirs.
type maskedRepo struct {
	objects string
	// dirs are the gitdirs, each with its working tree and the pathspecs of its masks.
	dirs  []string
	trees map[string]string
	specs map[string][]string
}

// maskedRepos are the object stores of p's repositories whose working trees hold masked
// paths, by objects directory.
func (p Policy) maskedRepos() map[string]*maskedRepo {
	out := map[string]*maskedRepo{}
	for _, d := range p.GitDirs {
		tree := p.trees[d]
		if tree == "" {
			continue
		}
		var specs []string
		for _, m := range p.Masked {
			if m == tree || !within(m, tree) || within(m, filepath.Join(tree, ".git")) {
				continue
			}
			rel, err := filepath.Rel(tree, m)
			if err == nil {
				specs = append(specs, ":(literal)"+filepath.ToSlash(rel))
			}
		}
		if len(specs) == 0 {
			continue
		}
		specs = append(specs, p.ruleSpecs(tree)...)
		for _, u := range p.Unmasked {
			if rel, err := filepath.Rel(tree, u); err == nil && within(u, tree) && u != tree {
				specs = append(specs, ":(exclude,literal)"+filepath.ToSlash(rel))
			}
		}
		o := objectsDir(d)
		r := out[o]
		if r == nil {
			r = &maskedRepo{objects: o, trees: map[string]string{}, specs: map[string][]string{}}
			out[o] = r
		}
		r.dirs = append(r.dirs, d)
		r.trees[d], r.specs[d] = tree, specs
	}
	return out
}

// ruleSpecs are the pathspecs, in tree, of what p's Read deny rules cover, whether it is there
// or not: a file a glob matches that was committed and removed since, or a directory's
// file, is hidden too. Only for a repository with masked paths in its working tree: for
// the others a walk of their history at every change of their refs would cost every command.
func (p Policy) ruleSpecs(tree string) []string {
	var out []string
	for _, r := range p.denyRules {
		dir := r.Dir
		if dir == "" {
			dir = p.denyCwd
		}
		base, glob := readDenyBase(r.Spec, dir, p.denyHome)
		switch {
		case base == "" || base == tree:
		case !glob:
			if rel, err := filepath.Rel(tree, base); err == nil && within(base, tree) {
				out = append(out, ":(literal)"+filepath.ToSlash(rel))
			}
		default:
			lit := base
			for strings.ContainsAny(lit, "*?[{") {
				lit = filepath.Dir(lit)
			}
			var rel string
			if within(lit, tree) {
				rel, _ = filepath.Rel(tree, base)
			} else if sub, _ := filepath.Rel(lit, base); within(tree, lit) && strings.HasPrefix(sub, "**/") {
				rel = sub // **/ matches below tree as it did below lit
			}
			if rel != "" {
				rel = filepath.ToSlash(rel)
				out = append(out, ":(glob)"+rel, ":(glob)"+rel+"/**")
			}
		}
	}
	return out
}

// protectAlternates makes objects/info/alternates read-only in each store with masked paths
// in its working trees: keel binds its own over it to add the blobs' stand-ins ([standIns]),
// and a bind needs a file there, a placeholder where there is none.
func (p *Policy) protectAlternates() {
	for o := range p.maskedRepos() {
		p.add(&p.ReadOnly, filepath.Join(o, "info", "alternates"), "keel's always-read-only paths (what git's checkout reads)")
	}
}

// key identifies what the hiding of r depends on: the masks, the refs, reflogs and index of
// each gitdir, the packs and the alternates. Stats only: taken at every command.
func (r *maskedRepo) key() string {
	var b strings.Builder
	b.WriteString(r.historyKey())
	for _, d := range r.dirs {
		b.WriteString(statString(filepath.Join(d, "index")))
	}
	b.WriteString(statDir(filepath.Join(r.objects, "pack")))
	b.WriteString(statString(filepath.Join(r.objects, "info", "alternates")))
	return b.String()
}

// objectMasks are what hides, for a command started now under p, the blobs of the masked
// files its repositories track: pack copies to bind, files to cover unreadable, directories
// to mask (the object store itself where it is sealed). Computed again for a repository
// whose key changed; what is not hidden, or sealed, is logged (HideObjects says it).
func (s *Sandbox) objectMasks(p Policy) (binds []objBind, unreadable, maskAs []string) {
	repos := p.maskedRepos()
	if len(repos) == 0 {
		return nil, nil, nil
	}
	s.objs.mu.Lock()
	defer s.objs.mu.Unlock()
	if s.objs.repos == nil {
		s.objs.repos = map[string]*objRepo{}
	}
	for _, o := range slices.Sorted(maps.Keys(repos)) {
		r := repos[o]
		key := r.key()
		cur := s.objs.repos[o]
		computed := cur == nil || cur.key != key || !cur.copiesKept()
		if computed {
			next := s.hideRepo(p, r, cur)
			switch {
			case next.sealed != "":
				slog.Warn("sandbox: git's objects masked whole for commands", "repo", o, "why", next.sealed)
			case next.why == "":
			case cur != nil && cur.why == "" && cur.sealed == "" && cur.copiesKept():
				// What hid them before hides them still.
				slog.Warn("sandbox: masked files' blobs hidden as before", "repo", o, "why", next.why)
				next = cur
			default:
				slog.Warn("sandbox: masked files stay readable through git", "repo", o, "why", next.why)
			}
			next.key = key
			cur = next
			s.objs.repos[o] = cur
		}
		if cur.sealed != "" {
			maskAs = append(maskAs, o)
			continue
		}
		if cur.why != "" {
			continue
		}
		binds = append(binds, cur.binds...)
		unreadable = append(unreadable, cur.unreadable...)
		maskAs = append(maskAs, cur.maskAs...)
		// Looked for at each command: one written since (a git add outside, an unpack) is
		// covered too.
		files, dirs := coverLoose(o, cur.hidden, cur.maskAs)
		if len(dirs) > 0 && computed {
			slog.Warn("sandbox: loose objects of masked files' blobs past the bound: their directories masked whole", "repo", o, "dirs", len(dirs))
		}
		unreadable, maskAs = append(unreadable, files...), append(maskAs, dirs...)
	}
	return binds, unreadable, maskAs
}

// withObjectMasks is p with what hides the blobs of its masked files for a command started
// now ([Sandbox.objectMasks]).
func (s *Sandbox) withObjectMasks(p Policy) Policy {
	binds, unreadable, maskAs := s.objectMasks(p)
	if len(binds)+len(unreadable)+len(maskAs) == 0 {
		return p
	}
	p.objBinds, p.unreadable = binds, unreadable
	p.Masked = append(slices.Clone(p.Masked), maskAs...)
	return p
}

// HideObjects hides, as for a command started now, the blobs of the masked files git tracks
// in each protected repository, and says what it did per repository: for the session's
// notice and `keel doctor`, which name the files that stay readable through git.
func (s *Sandbox) HideObjects() []ObjectCover {
	if !s.Policy().Enabled() {
		return nil
	}
	p := s.complete()
	repos := p.maskedRepos()
	var out []ObjectCover
	why := ""
	switch {
	case runtime.GOOS != "linux":
		why = "only Linux's sandbox can hide git's objects"
	case s.Available() != nil:
		why = "the sandbox is unavailable"
	case s.landlockOnly:
		why = "the Landlock-only form of the sandbox makes no mounts"
	default:
		s.objectMasks(p)
	}
	s.objs.mu.Lock()
	defer s.objs.mu.Unlock()
	for _, o := range slices.Sorted(maps.Keys(repos)) {
		c := ObjectCover{Why: why}
		for _, d := range repos[o].dirs {
			c.Trees = append(c.Trees, repos[o].trees[d])
		}
		if r := s.objs.repos[o]; why == "" && r != nil {
			c.Blobs, c.Why, c.Sealed = len(r.hidden), r.why, r.sealed
		}
		out = append(out, c)
	}
	return out
}

// copiesKept reports whether the pack copies r binds are all still there (a keel elsewhere
// prunes one no command used for objStateKeep), and renews their time.
func (r *objRepo) copiesKept() bool {
	now := time.Now()
	for _, b := range r.binds {
		if strings.HasSuffix(b.Src, ".idx") && os.Chtimes(b.Src, now, now) != nil ||
			filepath.Base(b.Src) == "alternates" && os.Chtimes(filepath.Dir(b.Src), now, now) != nil {
			return false
		}
	}
	return true
}

// hideRepo computes the hiding of r: the blobs, and a copy of each pack holding one (their
// loose objects are covered at each command: [coverLoose]). Where it cannot find or hide
// them for a reason a command can bring about, the store is sealed.
func (s *Sandbox) hideRepo(p Policy, r *maskedRepo, prev *objRepo) *objRepo {
	out := &objRepo{}
	for _, d := range r.dirs {
		out.trees = append(out.trees, r.trees[d])
	}
	if p.ObjectState == "" {
		out.why = "keel has no directory of its own to keep the filtered packs in"
		return out
	}
	ctx, cancel := context.WithTimeout(context.Background(), objMaskLimit)
	defer cancel()
	hidden, history, err := hiddenBlobs(ctx, r, prev)
	out.history = history
	if err != nil {
		// git's last line says what failed; the command line and hints before it only bury it.
		msg := strings.TrimSpace(err.Error())
		msg = msg[strings.LastIndexByte(msg, '\n')+1:]
		out.sealed = fmt.Sprintf("keel could not list the blobs at the masked paths (%s): repair the repository (git fsck; delete a ref that names a missing object)", msg)
		return out
	}
	if hidden, err = rememberHidden(p.ObjectState, r.objects, hidden); err != nil {
		out.sealed = err.Error()
		return out
	}
	out.hidden = hidden
	if len(hidden) == 0 {
		return out
	}
	packs, found, err := packsHolding(r.objects, hidden)
	if err != nil {
		out.sealed = err.Error() + ": repair or remove it"
		return out
	}
	for _, id := range hidden {
		if _, err := os.Lstat(filepath.Join(r.objects, id[:2], id[2:])); err == nil {
			found[id] = true
		}
	}
	if len(found) < len(hidden) && hasAlternates(r.objects) {
		// objects/info/alternates is read-only inside: no command set this up.
		out.why = "a blob may be in another object store (objects/info/alternates), which keel does not filter"
		return out
	}
	// The stand-ins are read from inside, where a directory of keel's in /tmp or masked is not
	// there: without them the blobs are hidden all the same, but a commit that writes a tree
	// holding one fails.
	if !p.MaskedAt(p.ObjectState) && (!within(p.ObjectState, "/tmp") || withinAny(p.ObjectState, p.Writable)) {
		if alternates, err := standIns(p.ObjectState, r.objects, hidden); err != nil {
			slog.Warn("sandbox: no stand-ins for hidden blobs: commits of trees holding one fail inside", "repo", r.objects, "err", err)
		} else {
			out.binds = append(out.binds, objBind{Src: alternates, Dest: filepath.Join(r.objects, "info", "alternates")})
		}
	}
	if len(packs) > 0 {
		if err := out.filterPacks(ctx, p.ObjectState, r, packs); err != "" {
			out.binds, out.unreadable, out.maskAs = nil, nil, nil
			out.sealed = err
		}
	}
	return out
}

// coverLoose are what covers the loose objects of ids in objects: each with an unreadable
// file, or — past maxHiddenLoose, each a mount at every command, a count a command passes by
// committing junk at a masked path — each fan-out directory holding one masked whole, so
// that the junk cannot show the others (git then misses the other loose objects there too,
// until git gc packs them). skip are directories masked already.
func coverLoose(objects string, ids, skip []string) (files, dirs []string) {
	for _, id := range ids {
		l := filepath.Join(objects, id[:2], id[2:])
		if _, err := os.Lstat(l); err == nil && !slices.Contains(skip, filepath.Dir(l)) {
			files = append(files, l)
		}
	}
	if len(files) <= maxHiddenLoose {
		return files, nil
	}
	for _, f := range files {
		if d := filepath.Dir(f); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return nil, dirs
}

// filterPacks binds over each of packs (index → the hidden blobs it holds) a copy without
// them, and covers what indexes the originals by offset; it says why it could not.
func (out *objRepo) filterPacks(ctx context.Context, state string, r *maskedRepo, packs map[string][]string) string {
	var size int64
	for idx := range packs {
		if fi, err := os.Stat(strings.TrimSuffix(idx, ".idx") + ".pack"); err == nil {
			size += fi.Size()
		}
	}
	if size > maxFilterPackBytes {
		return fmt.Sprintf("its packs holding them are %d bytes, past the %d keel copies: rewrite the masked files out of the history (git filter-repo)", size, maxFilterPackBytes)
	}
	for _, idx := range slices.Sorted(maps.Keys(packs)) {
		copyIdx, err := filteredPack(ctx, state, r.dirs[0], r.trees[r.dirs[0]], idx, packs[idx])
		if err != nil {
			return err.Error()
		}
		base, cbase := strings.TrimSuffix(idx, ".idx"), strings.TrimSuffix(copyIdx, ".idx")
		out.binds = append(out.binds, objBind{Src: cbase + ".pack", Dest: base + ".pack"}, objBind{Src: copyIdx, Dest: idx})
		for _, ext := range []string{".rev", ".bitmap", ".mtimes"} {
			out.unreadable = append(out.unreadable, base+ext)
		}
	}
	// What indexes every pack by offset, the copies' included.
	pack := filepath.Join(r.objects, "pack")
	out.unreadable = append(out.unreadable, filepath.Join(pack, "multi-pack-index"))
	if m, _ := filepath.Glob(filepath.Join(pack, "multi-pack-index-*")); len(m) > 0 {
		out.unreadable = append(out.unreadable, m...)
	}
	out.maskAs = append(out.maskAs, filepath.Join(pack, "multi-pack-index.d"))
	return ""
}

// hiddenBlobs lists the blobs committed at r's masked paths: every change to them in the
// history of every ref, reflog entry and object a pseudo-ref or state file names (each merge
// against each parent, so that no branch merged away is skipped), and each gitdir's index.
// The empty blob is left out. The history's are prev's when the refs are as prev found them
// (an index changes at every git status).
func hiddenBlobs(ctx context.Context, r *maskedRepo, prev *objRepo) (ids []string, history historyBlobs, err error) {
	found := map[string]bool{}
	history = historyBlobs{key: r.historyKey()}
	if prev != nil && prev.history.key == history.key {
		history.ids = prev.history.ids
	}
	for _, d := range r.dirs {
		tree, specs := r.trees[d], r.specs[d]
		// Replace refs and grafts, which a command can write, would show git another history.
		pre := []string{"--no-replace-objects", "--git-dir=" + d, "--work-tree=" + tree}
		run := gitexec.Runner{Env: append(os.Environ(), "GIT_GRAFT_FILE="+os.DevNull)}
		if history.ids == nil {
			if err := walkHistory(ctx, run, pre, d, tree, specs, found); err != nil {
				return nil, historyBlobs{}, err
			}
		}
		index, err := run.Output(ctx, tree, append(append(pre, "ls-files", "-s", "-z", "--"), specs...)...)
		if err != nil {
			return nil, historyBlobs{}, err
		}
		for f := range bytes.SplitSeq(index, []byte{0}) {
			meta, _, _ := strings.Cut(string(f), "\t")
			if fields := strings.Fields(meta); len(fields) == 3 && blobMode(fields[0]) {
				found[fields[1]] = true
			}
		}
	}
	if history.ids == nil {
		history.ids = slices.Sorted(maps.Keys(found))
	}
	for _, id := range history.ids {
		found[id] = true
	}
	for _, e := range emptyBlobs {
		delete(found, e)
	}
	ids = slices.Sorted(maps.Keys(found))
	for _, id := range ids {
		if _, err := hex.DecodeString(id); err != nil || len(id) != 40 && len(id) != 64 {
			return nil, historyBlobs{}, fmt.Errorf("git named an object %q", id)
		}
	}
	return ids, history, nil
}

// historyBlobs are the blobs found in the history of the refs and reflogs as key, their
// files' state, was.
type historyBlobs struct {
	key string
	ids []string
}

// historyKey identifies what the history's blobs depend on: the masks and the refs.
func (r *maskedRepo) historyKey() string {
	var b strings.Builder
	for _, d := range r.dirs {
		b.WriteString(d + "\x00" + strings.Join(r.specs[d], "\x00") + "\x00")
		b.WriteString(refsFingerprint(d))
		b.WriteString(stateFingerprint(d))
	}
	return b.String()
}

// blobMode reports whether a tree entry's mode is a file's or a link's (not a submodule's,
// nor the zeros of a side that does not exist).
func blobMode(mode string) bool {
	return mode == "100644" || mode == "100755" || mode == "120000" || mode == "100664"
}

// hasAlternates reports whether the object store names other stores.
func hasAlternates(objects string) bool {
	b, err := os.ReadFile(filepath.Join(objects, "info", "alternates"))
	return err == nil && len(bytes.TrimSpace(b)) > 0 || errors.Is(err, fs.ErrPermission)
}
