package sandbox

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/gitexec"
)

// A protected repository's object store stays writable, so that git commit works inside. git
// does not check, as it reads an object, that its content is what its name says: a command
// that rewrites the loose object of the blob .claude/settings.json was committed with — or a
// pack holding it, or its index, or adds a pack or loose object of that name with other
// content — has the user's next git checkout, reset or restore outside write content of its
// choosing there, and the ref and index checks ([plantWatch.checkRefs]), which compare names,
// see nothing. So keel knows what each protected repository's object store held as a command
// starts (each file's identity, size and times; a pack's and a pack index's trailing checksum)
// and, as it is released, checks every file that changed or is new:
//   - a loose object is inflated and hashed ("<type> <len>\0" and its content, SHA-1 or
//     SHA-256 by the length of its name), which must give its name;
//   - a pack or pack index that was there and still hashes (all but its trailer) to the
//     checksum it ended with before is what git wrote, which no other content gives;
//   - any other pack is read by git verify-pack, which hashes every object in it and compares
//     its index with them (bounded: past maxNewPackBytes of disk or packVerifyLimit, the pack
//     goes aside unverified — the bound then limits what a command can add, not what passes);
//   - a link or special file, which git would follow, goes aside;
//   - the caches git trusts to find objects or a commit's tree — commit-graph files, the
//     multi-pack index, a pack's reverse index and bitmap — are not checked: one the command
//     wrote or changed goes aside, and git works without it (gc makes it again).
//
// What fails goes aside (*.keel-refused): a missing object makes git fail loudly instead of
// checking out forged content, and the result says so. Where the store could not be checked
// whole, or a keel process first sees it, git is asked for the objects on the way from the
// refs to the read-only paths ([forgedObjects]).
// objects/info/alternates, which would add another store, is read-only ([checkoutFiles]).

// objFile is a file of an object store as keel last knew it.
type objFile struct {
	size, mtime int64
	mode        fs.FileMode
	id          stamp
	// trailer is a pack's or pack index's trailing checksum, in hex.
	trailer string
}

// stamp is a file's device, inode and change time: a file moved in has another,
// and a change time only the kernel sets.
type stamp struct {
	dev, ino uint64
	ctime    int64
}

// same reports whether f and o are the same file in the same state.
func (f objFile) same(o objFile) bool {
	return f.size == o.size && f.mtime == o.mtime && f.mode == o.mode && f.id == o.id
}

// objStore is what an object store held: its files by path relative to it, the loose objects
// apart (a map shared, not changed, once stored). over says it held more loose objects than
// maxObjectFiles; those past it are not known.
type objStore struct {
	loose, files map[string]objFile
	over         bool
	// firstSight says the store is as this process first saw it, not checked: keel may have
	// died after a command's background job forged an object, and its last check with it.
	firstSight bool
}

const (
	// maxObjectFiles bounds the loose objects of one store whose state keel keeps: past it,
	// the others are not checked, and each result says so (git gc packs them; gc --auto
	// does at 6,700).
	maxObjectFiles = 8192
	// maxNewPackBytesDefault bounds the disk space of the new packs one release verifies with
	// git ([maxNewPackBytes]): past it they go aside unverified, and the result says so.
	maxNewPackBytesDefault = 256 << 20
	// packVerifyLimit bounds git verify-pack on them: past it, the result says the pack was not
	// verified.
	packVerifyLimit = 2 * time.Minute
	// maxLooseObject is the largest object keel inflates to check: a larger one goes aside.
	maxLooseObject = 1 << 30
)

// maxNewPackBytes is maxNewPackBytesDefault; a test lowers it.
var maxNewPackBytes int64 = maxNewPackBytesDefault

// objectsDir is the object store of gitDir: its common directory's objects/.
func objectsDir(gitDir string) string {
	common, _, _ := readCommonDir(gitDir)
	return filepath.Join(common, "objects")
}

// noteObjects records the object store of each repository noteRefs guards, as the command
// starts: scanned afresh while no other command runs (what is there is the user's), else as
// the last release left it, since a running command may have changed it since.
func (w *plantWatch) noteObjects(s *Sandbox) {
	w.objects = map[string]string{}
	for _, d := range slices.Sorted(maps.Keys(w.guarded)) {
		if o := objectsDir(d); w.objects[o] == "" {
			w.objects[o] = d
		}
	}
	for o := range w.objects {
		s.disarmMu.Lock()
		prev, seen := s.objSeen[o]
		idle := len(s.watches) == 0
		s.disarmMu.Unlock()
		if seen && !idle {
			continue
		}
		// Known already, only packs and caches are read again: what the user did since with
		// those (a gc, a fetch) is theirs, and not checked at release; a loose object the user
		// wrote meanwhile is checked then, which costs an inflate.
		cur := scanObjects(o, prev, !seen)
		cur.firstSight = !seen
		s.disarmMu.Lock()
		// A command that started meanwhile may have written while this scan read: what the
		// store held then stays what its release compares with.
		if _, stored := s.objSeen[o]; len(s.watches) == 0 || !stored {
			s.objSeen[o] = cur
		}
		s.disarmMu.Unlock()
	}
}

// checkObjects checks, in each object store noteObjects recorded, every file that changed
// since keel last knew it, moves aside what fails, and says so. Call with s.disarmMu held.
func (w *plantWatch) checkObjects(s *Sandbox) []string {
	var said []string
	for _, o := range slices.Sorted(maps.Keys(w.objects)) {
		before, ok := s.objSeen[o]
		if !ok {
			continue
		}
		next, msgs, whole := verifyObjects(o, before)
		said = append(said, msgs...)
		if next.over {
			// At every release: a command can add loose objects until the one it rewrites is
			// past the bound.
			said = append(said, fmt.Sprintf("%s holds more than %d loose objects, and keel checked that the command did not rewrite or forge only %d of them: run git gc there (outside the sandbox) to pack them, and git fsck before checking anything out.", o, maxObjectFiles, maxObjectFiles))
		}
		if !whole || next.over || before.firstSight {
			d := w.objects[o]
			tree := w.trees[d]
			files, onPath := forgedObjects(d, tree, w.guarded[d], backstopRevs(d, w.refs[d]))
			for _, f := range files {
				said = append(said, fmt.Sprintf("In %s git reads the object of %s, named by what the file holds, with other content (a forged object keel did not find, the store not checked whole): a checkout of it outside would write that content. Run git fsck there before checking anything out.", tree, f))
			}
			for _, f := range onPath {
				said = append(said, fmt.Sprintf("In %s git reads %s, on the way from a ref to a read-only path, with other content than its name says (a forged object keel did not find, the store not checked whole): a checkout of that ref outside would write what the forgery says. Run git fsck there before checking anything out.", tree, f))
			}
		}
		s.objSeen[o] = next
	}
	if len(said) > 0 {
		slog.Warn("sandbox: a command left objects git would read as others", "what", said)
	}
	return said
}

// scanObjects lists the files of the object store dir, with their state; a pack's or index's
// trailer is read only when its state is not the one prev knew. Directories are read unsorted,
// and only as deep as git keeps files there: 1 to 2 µs a file, most of it the kernel's. With
// loose false only pack/ and info/ are read, and the loose objects are prev's.
func scanObjects(dir string, prev objStore, loose bool) objStore {
	st := objStore{loose: prev.loose, files: map[string]objFile{}}
	if !loose {
		st.over = prev.over
		for _, sub := range []string{"pack", "info"} {
			st.scan(dir, sub, prev, 1, nil)
		}
		return st
	}
	n := 0
	st.loose = make(map[string]objFile, len(prev.loose))
	st.scan(dir, "", prev, 0, &n)
	return st
}

// scan adds the files of dir/rel to st, as scanObjects says, counting the loose objects in
// loose.
func (st *objStore) scan(dir, rel string, prev objStore, depth int, loose *int) {
	var walk func(rel string, depth int)
	walk = func(rel string, depth int) {
		f, err := os.Open(filepath.Join(dir, rel))
		if err != nil {
			return
		}
		defer f.Close()
		entries, _ := f.ReadDir(-1)
		for _, e := range entries {
			r := e.Name()
			if rel != "" {
				r = rel + "/" + r
			}
			if e.IsDir() {
				if depth < 2 { // objects/pack/multi-pack-index.d/, objects/info/commit-graphs/
					walk(r, depth+1)
				}
				continue
			}
			into := st.files
			if isLoose(r) {
				if loose == nil {
					continue
				}
				if *loose++; *loose > maxObjectFiles {
					st.over = true
					continue
				}
				into = st.loose
			}
			of, ok := statAt(f, e.Name())
			if !ok {
				continue
			}
			if n := packHashLen(r); n > 0 {
				if p, ok := prev.files[r]; ok && p.same(of) {
					of.trailer = p.trailer
				} else {
					of.trailer = readTrailer(filepath.Join(dir, r), n)
				}
			}
			into[r] = of
		}
	}
	walk(rel, depth)
}

// verifyObjects checks the files of the object store dir that are not as before knew them,
// and returns the store as it now is — without what it moved aside, or could not check yet
// (a new pack whose index is not written), which the next release checks again; whole says
// every pack it had to was verified.
func verifyObjects(dir string, before objStore) (now objStore, said []string, whole bool) {
	now = scanObjects(dir, before, true)
	whole = true
	refuse := func(rel, what string) {
		path := filepath.Join(dir, filepath.FromSlash(rel))
		msg, failed := moveAsidePath(path, what)
		if failed && unlockDir(filepath.Dir(path)) {
			msg, _ = moveAsidePath(path, what)
		}
		said = append(said, msg)
		delete(now.files, rel)
		delete(now.loose, rel)
	}
	// A pack keel could not verify goes aside too: the budget then bounds what a command can
	// add, not what slips through. A gc or fetch inside that big is the user's to take back.
	refusePack := func(base, why string) {
		for _, ext := range []string{".idx", ".pack"} {
			before := len(said)
			refuse(base+ext, fmt.Sprintf("is a pack or pack index the command made or rewrote, and %s (it may be a gc's or a fetch's: if so, run git verify-pack -v on the .idx moved aside, outside the sandbox, and if it passes move both files back, without the suffix)", why))
			if len(said) > before && strings.Contains(said[len(said)-1], "could not move it aside") {
				whole = false
			}
		}
	}
	newPacks := map[string]bool{}
	type change struct {
		rel     string
		f, was  objFile
		existed bool
	}
	var changed []change
	for _, m := range [][2]map[string]objFile{{now.loose, before.loose}, {now.files, before.files}} {
		for rel, f := range m[0] {
			if was, existed := m[1][rel]; !existed || !was.same(f) {
				changed = append(changed, change{rel, f, was, existed})
			}
		}
	}
	slices.SortFunc(changed, func(a, b change) int { return strings.Compare(a.rel, b.rel) })
	for _, c := range changed {
		rel, f, was, existed := c.rel, c.f, c.was, c.existed
		path := filepath.Join(dir, filepath.FromSlash(rel))
		switch {
		case !f.mode.IsRegular():
			refuse(rel, "is a link or a special file where git keeps objects (git would follow it to objects keel does not watch)")
		case looseName(rel) != "":
			if !looseObjectOK(path, looseName(rel)) {
				refuse(rel, "is a loose object whose content is not the object its name says (git would read it as that object, and check it out)")
			}
		case packHashLen(rel) > 0:
			// One that still hashes to the trailer it had is what it was; any other — new, or
			// rewritten (an older git named a pack by the objects in it, so a repack could
			// keep the name) — is read whole.
			if !existed || was.trailer == "" || !trailerOK(path, was.trailer) {
				newPacks[strings.TrimSuffix(strings.TrimSuffix(rel, ".pack"), ".idx")] = true
			}
		case objectCache(rel):
			refuse(rel, "is an index git trusts to find objects or a commit's tree (a commit-graph, multi-pack index, reverse index or bitmap) that keel does not check; git works without it and makes it again at its next gc")
		}
	}
	budget := maxNewPackBytes
	for _, base := range slices.Sorted(maps.Keys(newPacks)) {
		pack, idx := filepath.Join(dir, base+".pack"), filepath.Join(dir, base+".idx")
		pfi, perr := os.Lstat(pack)
		ifi, ierr := os.Lstat(idx)
		if perr == nil && ierr == nil && (!pfi.Mode().IsRegular() || !ifi.Mode().IsRegular()) {
			continue // refused above
		}
		if perr != nil || ierr != nil {
			// Half a pack, which git does not use: checked when it is whole.
			delete(now.files, base+".pack")
			delete(now.files, base+".idx")
			continue
		}
		// Allocated blocks, not the apparent size: a sparse pack costs nothing to make, and
		// must not use up what the others are verified with.
		if budget -= allocatedSize(pfi) + allocatedSize(ifi); budget < 0 {
			refusePack(base, fmt.Sprintf("keel verifies at most %d MiB of new or rewritten packs at one release and this one was past that, so keel did not verify it", maxNewPackBytes>>20))
			continue
		}
		switch err := verifyPack(dir, idx); {
		case errors.Is(err, context.DeadlineExceeded):
			refusePack(base, fmt.Sprintf("keel could not verify it in %s", packVerifyLimit))
		case err != nil:
			slog.Warn("sandbox: a pack does not verify", "pack", pack, "err", err)
			refuse(base+".idx", "is the index of a pack whose objects are not what it names (git verify-pack fails on the pair; git would read them as the command made them)")
			refuse(base+".pack", "is a pack whose objects are not what its index names (git verify-pack fails on the pair)")
		}
	}
	return now, said, whole
}

// unlockDir gives the owner back write permission on dir, a directory of an object store
// that a command took it from, so that what it forged there can be moved aside; it reports
// whether it did.
func unlockDir(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o200 != 0 {
		return false
	}
	return os.Chmod(dir, fi.Mode().Perm()|0o200) == nil
}

// looseName is the object name of rel when it names a loose object (xx/ and 38 or 62 hex
// digits, as git reads them); "" otherwise.
func looseName(rel string) string {
	if !isLoose(rel) {
		return ""
	}
	return rel[:2] + rel[3:]
}

// isLoose reports whether rel names a loose object; a scan asks it of every file.
func isLoose(rel string) bool {
	if len(rel) != 2*sha1.Size+1 && len(rel) != 2*sha256.Size+1 || rel[2] != '/' {
		return false
	}
	for i := 0; i < len(rel); i++ {
		if c := rel[i]; i != 2 && !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// packHashLen is the length of the checksum that ends rel when it is a pack or a pack index
// (pack/pack-<hash>.pack or .idx, its name as long as the repository's hash); 0 otherwise.
func packHashLen(rel string) int {
	name, ok := strings.CutPrefix(rel, "pack/pack-")
	if !ok {
		return 0
	}
	for _, ext := range []string{".pack", ".idx"} {
		if h, ok := strings.CutSuffix(name, ext); ok && isHex(h) && (len(h) == 2*sha1.Size || len(h) == 2*sha256.Size) {
			return len(h) / 2
		}
	}
	return 0
}

// objectCache reports whether rel is a file git trusts to find objects, or a commit's tree,
// without reading the objects themselves.
func objectCache(rel string) bool {
	return rel == "info/commit-graph" || strings.HasPrefix(rel, "info/commit-graphs/") ||
		rel == "pack/multi-pack-index" || strings.HasPrefix(rel, "pack/multi-pack-index.d/") ||
		strings.HasPrefix(rel, "pack/") && (strings.HasSuffix(rel, ".rev") || strings.HasSuffix(rel, ".bitmap"))
}

// newHash is the hash git names objects with, by the length of a name or checksum in bytes.
func newHash(n int) hash.Hash {
	switch n {
	case sha1.Size:
		return sha1.New()
	case sha256.Size:
		return sha256.New()
	}
	return nil
}

// readTrailer is the last n bytes of the regular file at path, in hex; "" when it has none.
func readTrailer(path string, n int) string {
	f, err := openRegular(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() < int64(n) {
		return ""
	}
	b := make([]byte, n)
	if _, err := f.ReadAt(b, fi.Size()-int64(n)); err != nil {
		return ""
	}
	return hex.EncodeToString(b)
}

// trailerOK reports whether the pack or index at path still hashes to want, the trailer it
// had, and still ends with it.
func trailerOK(path, want string) bool {
	n := len(want) / 2
	h := newHash(n)
	f, err := openRegular(path)
	if err != nil || h == nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() < int64(n) {
		return false
	}
	body := fi.Size() - int64(n)
	if c, err := io.Copy(h, io.LimitReader(f, body)); err != nil || c != body {
		return false
	}
	tail := make([]byte, n)
	if _, err := io.ReadFull(f, tail); err != nil {
		return false
	}
	return hex.EncodeToString(h.Sum(nil)) == want && hex.EncodeToString(tail) == want
}

// looseObjectOK reports whether the loose object at path inflates to an object whose hash
// is name: a header "<type> <len>\0" and that many bytes, and nothing after.
func looseObjectOK(path, name string) bool {
	h := newHash(len(name) / 2)
	f, err := openRegular(path)
	if err != nil || h == nil {
		return false
	}
	defer f.Close()
	z, err := zlib.NewReader(f)
	if err != nil {
		return false
	}
	defer z.Close()
	r := io.TeeReader(z, h)
	var header []byte
	for len(header) < 64 {
		var c [1]byte
		if _, err := io.ReadFull(r, c[:]); err != nil {
			return false
		}
		if c[0] == 0 {
			break
		}
		header = append(header, c[0])
	}
	kind, size, ok := bytes.Cut(header, []byte{' '})
	n, err := strconv.ParseInt(string(size), 10, 64)
	if !ok || err != nil || n < 0 || n > maxLooseObject || !slices.Contains([]string{"blob", "tree", "commit", "tag"}, string(kind)) {
		return false
	}
	if c, err := io.Copy(io.Discard, io.LimitReader(r, n+1)); err != nil || c != n {
		return false
	}
	return hex.EncodeToString(h.Sum(nil)) == name
}

// verifyPack runs git verify-pack on the pack index idx in the object store dir: it hashes
// every object of the pack and fails when one is not what the index names.
func verifyPack(dir, idx string) error {
	ctx, cancel := context.WithTimeout(context.Background(), packVerifyLimit)
	defer cancel()
	// In the repository, for its object format: its configuration is protected, and gitexec
	// leaves out whatever in it would start a program.
	_, err := gitexec.Runner{}.Output(ctx, dir, "--git-dir="+filepath.Dir(dir), "verify-pack", idx)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
