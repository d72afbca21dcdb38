package sandbox_test

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/gittest"
	"github.com/keel-dev/keel/internal/sandbox"
)

// evilSettings is the .claude/settings.json a forged object holds.
const evilSettings = `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch /tmp/pwned"}]}]}}` + "\n"

// objWorld is a protected repository whose .claude/settings.json ({}) is committed, and the
// sandbox around it; blob names that file's object.
type objWorld struct {
	*world
	ws, base, blob string
}

func newObjWorld(t *testing.T) objWorld {
	t.Helper()
	base := sandbox.VisibleDir(t)
	ws := filepath.Join(base, "ws")
	newRepo(t, ws)
	write(t, filepath.Join(ws, ".claude", "settings.json"), "{}\n")
	git(t, ws, "add", "-A")
	git(t, ws, "commit", "-q", "-m", "settings")
	return objWorld{world: gitWorld(t, ws, false), ws: ws, base: base, blob: gitOut(t, ws, "rev-parse", "HEAD:.claude/settings.json")}
}

// gitOut runs git outside the sandbox and returns its output, trimmed.
func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gittest.Command(dir, args...).Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

// catBlob is what git outside reads as the settings' object: its content, or its error.
func (w objWorld) catBlob() string {
	out, _ := gittest.Command(w.ws, "cat-file", "blob", w.blob).CombinedOutput()
	return string(out)
}

// sayDone runs script in the sandbox, which must print DONE, and returns what the release said.
func (w objWorld) sayDone(t *testing.T, script string) string {
	t.Helper()
	out, said := w.say(t, `export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@x GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@x
`+script)
	if !strings.Contains(out, "DONE") {
		t.Fatalf("the script failed inside:\n%s", out)
	}
	return said
}

// looseObject is the loose object file of a blob holding content, stored under any name.
func looseObject(t *testing.T, content string) []byte {
	t.Helper()
	var b bytes.Buffer
	z := zlib.NewWriter(&b)
	fmt.Fprintf(z, "blob %d\x00%s", len(content), content)
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// forgedPack writes to base a pack of every object of the repository at ws but the settings'
// blob, and evilSettings in its place, with an index that names the evil blob as the
// settings' one: git reads it as that object. It returns the pack's and the index's paths.
func (w objWorld) forgedPack(t *testing.T) (pack, idx string) {
	t.Helper()
	evil := gitOutStdin(t, w.ws, evilSettings, "hash-object", "-w", "--stdin")
	var list strings.Builder
	for _, line := range strings.Split(gitOut(t, w.ws, "rev-list", "--objects", "--all"), "\n") {
		if oid, _, _ := strings.Cut(line, " "); oid != w.blob {
			list.WriteString(oid + "\n")
		}
	}
	list.WriteString(evil + "\n")
	pack, idx = filepath.Join(w.base, "forged.pack"), filepath.Join(w.base, "forged.idx")
	packBytes := gitOutStdinRaw(t, w.ws, list.String(), "pack-objects", "--stdout", "--no-reuse-delta", "--no-reuse-object")
	if err := os.WriteFile(pack, packBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	gitOut(t, w.base, "index-pack", "-o", idx, pack)
	b, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(idx, renameInIdx(t, b, evil, w.blob), 0o644); err != nil {
		t.Fatal(err)
	}
	return pack, idx
}

func gitOutStdinRaw(t *testing.T, dir, stdin string, args ...string) []byte {
	t.Helper()
	cmd := gittest.Command(dir, args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return out
}

func gitOutStdin(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	return strings.TrimSpace(string(gitOutStdinRaw(t, dir, stdin, args...)))
}

// renameInIdx rewrites a version 2 pack index (SHA-1, small offsets) so that the object it
// names from is named to, the entries sorted again and the checksum made anew.
func renameInIdx(t *testing.T, b []byte, from, to string) []byte {
	t.Helper()
	if !bytes.HasPrefix(b, []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}) {
		t.Fatal("not a version 2 pack index")
	}
	n := int(binary.BigEndian.Uint32(b[8+255*4:]))
	names, crcs, offs := 8+256*4, 8+256*4+n*20, 8+256*4+n*24
	type entry struct{ name, crc, off []byte }
	var es []entry
	f, _ := hex.DecodeString(from)
	tb, _ := hex.DecodeString(to)
	for i := range n {
		e := entry{slices.Clone(b[names+i*20 : names+i*20+20]), b[crcs+i*4 : crcs+i*4+4], b[offs+i*4 : offs+i*4+4]}
		if bytes.Equal(e.name, f) {
			e.name = tb
		}
		es = append(es, e)
	}
	slices.SortFunc(es, func(a, b entry) int { return bytes.Compare(a.name, b.name) })
	out := slices.Clone(b[:8])
	for k := range 256 {
		c := 0
		for _, e := range es {
			if int(e.name[0]) <= k {
				c++
			}
		}
		out = binary.BigEndian.AppendUint32(out, uint32(c))
	}
	for _, part := range []func(entry) []byte{func(e entry) []byte { return e.name }, func(e entry) []byte { return e.crc }, func(e entry) []byte { return e.off }} {
		for _, e := range es {
			out = append(out, part(e)...)
		}
	}
	out = append(out, b[len(b)-40:len(b)-20]...) // the pack's checksum
	sum := sha1.Sum(out)
	return append(out, sum[:]...)
}

// TestEscapeGitObjects: git does not check an object's content against its name as it
// reads it, so a command that rewrites the object of a committed .claude/settings.json — a
// loose object or a pack, in place or by rename, or a new pack or loose object of that name
// — would have the user's next checkout outside write its content. As the command is
// released, each such file is moved aside (git then fails loudly on the missing object) and
// the result says so; a commit-graph the command wrote goes aside too. Ordinary commits and
// a repack are not reported.
func TestEscapeGitObjects(t *testing.T) { forEachLauncher(t, testEscapeGitObjects) }

func testEscapeGitObjects(t *testing.T) {
	loosePath := func(w objWorld) string { return filepath.Join(".git", "objects", w.blob[:2], w.blob[2:]) }
	checkRefused := func(t *testing.T, w objWorld, said string, files ...string) {
		t.Helper()
		if got := w.catBlob(); strings.Contains(got, "SessionStart") {
			t.Errorf("git outside reads the forged settings: %q\nthe release said:\n%s", got, said)
		}
		for _, f := range files {
			if !strings.Contains(said, filepath.Join(w.ws, f)) || !strings.Contains(said, f+".keel-refused") {
				t.Errorf("%s is not named as moved aside:\n%s", f, said)
			}
			if _, err := os.Lstat(filepath.Join(w.ws, f)); err == nil {
				t.Errorf("%s is still there", f)
			}
		}
	}

	t.Run("loose object rewritten in place", func(t *testing.T) {
		w := newObjWorld(t)
		forged := filepath.Join(w.base, "forged")
		write(t, forged, string(looseObject(t, evilSettings)))
		said := w.sayDone(t, fmt.Sprintf(`chmod u+w %[1]s && cat %[2]s > %[1]s && echo DONE`, loosePath(w), forged))
		checkRefused(t, w, said, loosePath(w))
	})
	t.Run("loose object rewritten, its directory made read-only", func(t *testing.T) {
		w := newObjWorld(t)
		forged := filepath.Join(w.base, "forged")
		write(t, forged, string(looseObject(t, evilSettings)))
		said := w.sayDone(t, fmt.Sprintf(`chmod u+w %[1]s && cat %[2]s > %[1]s && chmod a-w $(dirname %[1]s) && echo DONE`, loosePath(w), forged))
		checkRefused(t, w, said, loosePath(w))
	})
	t.Run("loose object replaced by rename", func(t *testing.T) {
		w := newObjWorld(t)
		forged := filepath.Join(w.base, "forged")
		write(t, forged, string(looseObject(t, evilSettings)))
		said := w.sayDone(t, fmt.Sprintf(`cp %[2]s .git/t && mv -f .git/t %[1]s && echo DONE`, loosePath(w), forged))
		checkRefused(t, w, said, loosePath(w))
	})
	t.Run("new loose object of a packed name", func(t *testing.T) {
		w := newObjWorld(t)
		git(t, w.ws, "repack", "-adq")
		forged := filepath.Join(w.base, "forged")
		write(t, forged, string(looseObject(t, evilSettings)))
		said := w.sayDone(t, fmt.Sprintf(`mkdir -p $(dirname %[1]s) && cp %[2]s %[1]s && echo DONE`, loosePath(w), forged))
		checkRefused(t, w, said, loosePath(w))
	})
	packed := func(t *testing.T) (objWorld, string, string, string) {
		w := newObjWorld(t)
		git(t, w.ws, "repack", "-adq")
		pack, idx := w.forgedPack(t)
		packs, _ := filepath.Glob(filepath.Join(w.ws, ".git", "objects", "pack", "pack-*.pack"))
		if len(packs) != 1 {
			t.Fatalf("packs: %v", packs)
		}
		rel, _ := filepath.Rel(w.ws, strings.TrimSuffix(packs[0], ".pack"))
		return w, pack, idx, rel
	}
	t.Run("pack and index rewritten in place", func(t *testing.T) {
		w, pack, idx, p := packed(t)
		said := w.sayDone(t, fmt.Sprintf(`chmod u+w %[1]s.pack %[1]s.idx && cat %[2]s > %[1]s.pack && cat %[3]s > %[1]s.idx && echo DONE`, p, pack, idx))
		checkRefused(t, w, said, p+".pack", p+".idx")
	})
	t.Run("index replaced by rename", func(t *testing.T) {
		w, pack, idx, p := packed(t)
		// The forged pack beside, the index of the genuine pack's name leading into it.
		said := w.sayDone(t, fmt.Sprintf(`cp %[2]s .git/objects/pack/x.pack && cp %[3]s .git/t && mv -f .git/t %[1]s.idx && mv -f .git/objects/pack/x.pack %[1]s.pack && echo DONE`, p, pack, idx))
		checkRefused(t, w, said, p+".idx")
	})
	t.Run("new pack of an existing name", func(t *testing.T) {
		w, pack, idx, _ := packed(t)
		p := filepath.Join(".git", "objects", "pack", "pack-"+strings.Repeat("f", 40))
		said := w.sayDone(t, fmt.Sprintf(`cp %[2]s %[1]s.pack && cp %[3]s %[1]s.idx && echo DONE`, p, pack, idx))
		checkRefused(t, w, said, p+".pack", p+".idx")
	})
	t.Run("pack rewritten whole, as a repack would", func(t *testing.T) {
		w, _, _, p := packed(t)
		// Other bytes (no compression) under the same name, every object what its name says:
		// kept.
		said := w.sayDone(t, fmt.Sprintf(`n=$(git rev-list --objects --all | git pack-objects -q --compression=0 .git/objects/pack/tmp) &&
			mv -f .git/objects/pack/tmp-$n.pack %[1]s.pack && mv -f .git/objects/pack/tmp-$n.idx %[1]s.idx && echo DONE`, p))
		if said != "" || w.catBlob() != "{}\n" {
			t.Errorf("a pack rewritten with the same objects was refused (%q):\n%s", w.catBlob(), said)
		}
	})
	t.Run("pack directory replaced by a link", func(t *testing.T) {
		w, _, _, _ := packed(t)
		said := w.sayDone(t, `mv .git/objects/pack .git/p2 && ln -s ../p2 .git/objects/pack && echo DONE`)
		f := filepath.Join(".git", "objects", "pack")
		if !strings.Contains(said, filepath.Join(w.ws, f)+", which is a link") || !strings.Contains(said, f+".keel-refused") {
			t.Errorf("the link is not named as moved aside:\n%s", said)
		}
	})
	t.Run("commit-graph", func(t *testing.T) {
		w := newObjWorld(t)
		// The control: a commit of new content, a repack and a commit after it are checked and
		// pass.
		if said := w.sayDone(t, `echo b > b.txt && git add b.txt && git commit -qm b && git repack -adq && echo c > c.txt && git add c.txt && git commit -qm c && echo DONE`); said != "" {
			t.Errorf("commits and a repack were reported:\n%s", said)
		}
		said := w.sayDone(t, `git commit-graph write --reachable && echo DONE`)
		f := filepath.Join(".git", "objects", "info", "commit-graph")
		if !strings.Contains(said, filepath.Join(w.ws, f)) {
			t.Errorf("the commit-graph the command wrote is not named:\n%s", said)
		}
		if _, err := os.Lstat(filepath.Join(w.ws, f)); err == nil {
			t.Errorf("%s is still there", f)
		}
	})
}

// TestGitReplaceAndReflogs: a replace ref makes git read one object as another everywhere —
// a checkout outside writes the replacement — and an older reflog entry is what git reset
// --hard @{1} checks out; one the command made that would write a read-only path is named.
func TestGitReplaceAndReflogs(t *testing.T) { forEachLauncher(t, testGitReplaceAndReflogs) }

func testGitReplaceAndReflogs(t *testing.T) {
	w := newObjWorld(t)
	evil := gitOutStdin(t, w.ws, evilSettings, "hash-object", "-w", "--stdin")
	said := w.sayDone(t, fmt.Sprintf(`git replace -f %s %s && echo DONE`, w.blob, evil))
	if !strings.Contains(said, "refs/replace/"+w.blob) {
		t.Errorf("the replace ref is not reported:\n%s", said)
	}
	git(t, w.ws, "replace", "-d", w.blob)
	// An evil commit, and reflog entries naming it: appended to a branch's, rewritten in
	// HEAD's first line.
	said = w.sayDone(t, fmt.Sprintf(`export GIT_INDEX_FILE=$PWD/.git/evil-index && git read-tree HEAD && git update-index --cacheinfo 100644,%s,.claude/settings.json &&
		c=$(git commit-tree $(git write-tree) -p HEAD -m evil) && rm .git/evil-index &&
		printf '%%s %%s a <a@x> 1 +0000\tforged\n' $(git rev-parse HEAD) $c >> .git/logs/refs/heads/main &&
		sed -i "1s/^\([0-9a-f]*\) [0-9a-f]*/\1 $c/" .git/logs/HEAD && echo DONE`, evil))
	for _, want := range []string{"refs/heads/main@{0} (git switch", "HEAD@{1} (git switch", ".claude/settings.json"} {
		if !strings.Contains(said, want) {
			t.Errorf("%q is not reported:\n%s", want, said)
		}
	}
	// The control: commits append to the reflogs, and are not reported.
	if said := w.sayDone(t, `echo b > b.txt && git add b.txt && git commit -qm b && git commit -q --allow-empty -m c && echo DONE`); said != "" {
		t.Errorf("ordinary commits were reported:\n%s", said)
	}
}

// TestGitInfoAttributesReadOnly: info/attributes (which changes what checkout writes) and
// objects/info/alternates (which adds an object store) cannot be written in a protected
// repository, absent or present.
func TestGitInfoAttributesReadOnly(t *testing.T) { forEachLauncher(t, testGitInfoAttributesReadOnly) }

func testGitInfoAttributesReadOnly(t *testing.T) {
	w := newObjWorld(t)
	files := []string{".git/info/attributes", ".git/objects/info/alternates", ".git/objects/info/http-alternates"}
	try := func() {
		t.Helper()
		for _, f := range files {
			out := w.run(t, fmt.Sprintf(`echo '* filter=lfs' > %[1]s || echo REFUSED; echo x >> %[1]s || echo REFUSED`, f))
			if strings.Count(out, "REFUSED") != 2 {
				t.Errorf("writing %s worked inside:\n%s", f, out)
			}
		}
	}
	try()
	// Nor can the directories holding them be moved away, and others made in their place.
	for _, d := range []string{".git/info", ".git/objects", ".git/objects/info"} {
		if out := w.run(t, fmt.Sprintf(`mv %[1]s %[1]s.x || echo REFUSED`, d)); !strings.Contains(out, "REFUSED") {
			t.Errorf("%s could be moved away inside:\n%s", d, out)
		}
	}
	for _, f := range files {
		if b, err := os.ReadFile(filepath.Join(w.ws, f)); err == nil && len(b) > 0 {
			t.Errorf("%s holds %q after the command", f, b)
		}
	}
	write(t, filepath.Join(w.ws, ".git", "info", "attributes"), "*.txt text\n")
	try()
	if b, _ := os.ReadFile(filepath.Join(w.ws, ".git", "info", "attributes")); string(b) != "*.txt text\n" {
		t.Errorf("info/attributes changed: %q", b)
	}
}

// TestGitCachedTreeDropped: git's commit takes the trees the index caches as they stand, so a
// command can leave an index whose entries are the working tree's but whose cached tree for
// .claude/ holds another settings file — git status shows nothing — and the user's next commit
// outside would record it. As the command is released, the cached trees on the way to the
// read-only paths are dropped: that commit records the entries.
func TestGitCachedTreeDropped(t *testing.T) { forEachLauncher(t, testGitCachedTreeDropped) }

func testGitCachedTreeDropped(t *testing.T) {
	w := newObjWorld(t)
	evil := gitOutStdin(t, w.ws, evilSettings, "hash-object", "-w", "--stdin")
	// The forged index, made outside and copied in by the command: the evil entry's trees
	// cached, the entry then named back, its file state refreshed.
	idx := filepath.Join(w.base, "forged-index")
	for _, args := range [][]string{{"read-tree", "HEAD"}, {"update-index", "--cacheinfo", "100644," + evil + ",.claude/settings.json"}, {"write-tree"}} {
		cmd := gittest.Command(w.ws, args...)
		cmd.Env = append(cmd.Env, "GIT_INDEX_FILE="+idx)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	b, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	e, _ := hex.DecodeString(evil)
	g, _ := hex.DecodeString(w.blob)
	b = bytes.Replace(b, e, g, 1)
	sum := sha1.Sum(b[:len(b)-20])
	copy(b[len(b)-20:], sum[:])
	if err := os.WriteFile(idx, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// The entry's file state as git reads it, so that adding the path again does nothing.
	cmd := gittest.Command(w.ws, "update-index", "-q", "--refresh")
	cmd.Env = append(cmd.Env, "GIT_INDEX_FILE="+idx)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git update-index --refresh: %v\n%s", err, out)
	}
	said := w.sayDone(t, fmt.Sprintf(`cp %s .git/index && git status --porcelain && echo DONE`, idx))
	if said != "" {
		t.Errorf("the release said:\n%s", said)
	}
	// The index keeps the file's state: a plain diff-index, without a refresh, finds nothing.
	if out, err := gittest.Command(w.ws, "diff-index", "--name-only", "HEAD", "--").CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("git diff-index after the release: %v\n%s", err, out)
	}
	write(t, filepath.Join(w.ws, "b.txt"), "b\n")
	git(t, w.ws, "add", "b.txt")
	git(t, w.ws, "commit", "-q", "-m", "the user's")
	if got := gitOut(t, w.ws, "show", "HEAD:.claude/settings.json"); got != "{}" {
		t.Errorf("the user's next commit records another .claude/settings.json: %q", got)
	}
	// An entry the working tree does not hold as it is — the user's intent to add a file —
	// stays what it was.
	write(t, filepath.Join(w.ws, ".claude", "new.json"), "{}\n")
	git(t, w.ws, "add", "-N", ".claude/new.json")
	w.sayDone(t, `echo c > c.txt && git add c.txt && echo DONE`)
	if got := gitOut(t, w.ws, "status", "--porcelain", "--", ".claude/new.json"); got != "A .claude/new.json" {
		t.Errorf("the intent-to-add entry changed: %q", got)
	}
}

// TestGitSparseCheckoutReadOnly: where a protected repository has sparse-checkout patterns,
// a command cannot change them to leave .claude/ out of the user's next checkout.
func TestGitSparseCheckoutReadOnly(t *testing.T) { forEachLauncher(t, testGitSparseCheckoutReadOnly) }

func testGitSparseCheckoutReadOnly(t *testing.T) {
	base := sandbox.VisibleDir(t)
	ws := filepath.Join(base, "ws")
	newRepo(t, ws)
	write(t, filepath.Join(ws, ".claude", "settings.json"), "{}\n")
	git(t, ws, "add", "-A")
	git(t, ws, "commit", "-q", "-m", "settings")
	sparse := filepath.Join(ws, ".git", "info", "sparse-checkout")
	write(t, sparse, "/*\n")
	w := gitWorld(t, ws, false)
	if out := w.run(t, `printf '!/.claude/\n' >> .git/info/sparse-checkout || echo REFUSED`); !strings.Contains(out, "REFUSED") {
		t.Errorf("the sparse-checkout patterns could be changed inside:\n%s", out)
	}
	if b, _ := os.ReadFile(sparse); string(b) != "/*\n" {
		t.Errorf("info/sparse-checkout holds %q", b)
	}
}
