package sandbox_test

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/gittest"
	"github.com/keel-dev/keel/internal/sandbox"
)

// evilCommit is the shell that makes, inside, a commit c of HEAD with .claude/settings.json
// holding evilSettings, no ref moved.
func evilCommit(t *testing.T, w objWorld) string {
	t.Helper()
	evil := gitOutStdin(t, w.ws, evilSettings, "hash-object", "-w", "--stdin")
	return fmt.Sprintf(`export GIT_INDEX_FILE=$PWD/.git/evil-index && git read-tree HEAD && git update-index --cacheinfo 100644,%s,.claude/settings.json &&
		c=$(git commit-tree $(git write-tree) -p HEAD -m evil) && rm .git/evil-index && unset GIT_INDEX_FILE`, evil)
}

// TestGitPriorCheckoutForged: git checkout - takes the branch or commit the newest
// "checkout: moving from X to Y" message of HEAD's reflog names, not an id. A line appended
// between ids that were already there, naming a commit of the command's, is reported as
// @{-1}; a rewritten line is reported; ordinary checkouts are not.
func TestGitPriorCheckoutForged(t *testing.T) { forEachLauncher(t, testGitPriorCheckoutForged) }

func testGitPriorCheckoutForged(t *testing.T) {
	w := newObjWorld(t)
	// The control: switching branches inside (same .claude/) moves @{-1}, not reported.
	if said := w.sayDone(t, `git checkout -q -b other && git checkout -q main && echo DONE`); said != "" {
		t.Errorf("ordinary checkouts were reported:\n%s", said)
	}
	said := w.sayDone(t, evilCommit(t, w)+` &&
		h=$(git rev-parse HEAD) && printf '%s %s a <a@x> 1 +0000\tcheckout: moving from %s to main\n' $h $h $c >> .git/logs/HEAD && echo DONE`)
	for _, want := range []string{"@{-1}", ".claude/settings.json"} {
		if !strings.Contains(said, want) {
			t.Errorf("%q is not reported:\n%s", want, said)
		}
	}
	if got := gitOut(t, w.ws, "rev-parse", "@{-1}:.claude/settings.json"); got == w.blob {
		t.Fatalf("the forged line does not change what git checkout - takes")
	}
	// A message rewritten in place (same length, older line): the log no longer begins as it did.
	said = w.sayDone(t, `sed -i '1s/commit (initial)/commit (lnitial)/' .git/logs/HEAD && grep -q lnitial .git/logs/HEAD && echo DONE`)
	if !strings.Contains(said, "rewrote") {
		t.Errorf("a rewritten reflog line is not reported:\n%s", said)
	}
}

// evilTree writes, outside, a .claude tree whose settings.json is evilSettings, and returns
// its name and raw content and the name of HEAD's .claude tree.
func (w objWorld) evilTree(t *testing.T) (evil string, raw []byte, real string) {
	t.Helper()
	blob := gitOutStdin(t, w.ws, evilSettings, "hash-object", "-w", "--stdin")
	evil = gitOutStdin(t, w.ws, "100644 blob "+blob+"\tsettings.json\n", "mktree")
	return evil, gitOutStdinRaw(t, w.ws, "", "cat-file", "tree", evil), gitOut(t, w.ws, "rev-parse", "HEAD:.claude")
}

// forgedTreePack writes to base a pack of every object of the repository but HEAD's .claude
// tree, and an evil one in its place, with an index that names it as the real one.
func (w objWorld) forgedTreePack(t *testing.T) (pack, idx string) {
	t.Helper()
	evil, _, real := w.evilTree(t)
	var list strings.Builder
	for _, line := range strings.Split(gitOut(t, w.ws, "rev-list", "--objects", "--all"), "\n") {
		if oid, _, _ := strings.Cut(line, " "); oid != real {
			list.WriteString(oid + "\n")
		}
	}
	list.WriteString(evil + "\n" + gitOut(t, w.ws, "rev-parse", evil+":settings.json") + "\n")
	pack, idx = filepath.Join(w.base, "forged.pack"), filepath.Join(w.base, "forged.idx")
	if err := os.WriteFile(pack, gitOutStdinRaw(t, w.ws, list.String(), "pack-objects", "--stdout", "--no-reuse-delta", "--no-reuse-object"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitOut(t, w.base, "index-pack", "-o", idx, pack)
	b, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(idx, renameInIdx(t, b, evil, real), 0o644); err != nil {
		t.Fatal(err)
	}
	return pack, idx
}

// TestGitPackBudget: a new pack keel does not verify goes aside, as one that fails does,
// saying how to take it back; the budget counts the disk a pack takes, so a sparse pack of
// 300 MiB does not use it up and let a pack whose tree of .claude/ is forged pass.
func TestGitPackBudget(t *testing.T) { forEachLauncher(t, testGitPackBudget) }

func testGitPackBudget(t *testing.T) {
	setup := func(t *testing.T) (objWorld, string) {
		w := newObjWorld(t)
		git(t, w.ws, "repack", "-adq")
		pack, idx := w.forgedTreePack(t)
		ffff := filepath.Join(".git", "objects", "pack", "pack-"+strings.Repeat("f", 40))
		// The user's pack deleted, the forged one in its place.
		return w, fmt.Sprintf(`rm -f .git/objects/pack/pack-*.pack .git/objects/pack/pack-*.idx && cp %[2]s %[1]s.pack && cp %[3]s %[1]s.idx`, ffff, pack, idx)
	}
	outside := func(t *testing.T, w objWorld, said string) {
		t.Helper()
		out, _ := gittest.Command(w.ws, "cat-file", "-p", "HEAD:.claude/settings.json").CombinedOutput()
		if strings.Contains(string(out), "SessionStart") {
			t.Errorf("git outside reads the forged tree's settings: %q\nthe release said:\n%s", out, said)
		}
	}
	ffff := "pack-" + strings.Repeat("f", 40)
	t.Run("sparse pack", func(t *testing.T) {
		w, forge := setup(t)
		zero := filepath.Join(".git", "objects", "pack", "pack-"+strings.Repeat("0", 40))
		said := w.sayDone(t, forge+fmt.Sprintf(` && truncate -s 300M %[1]s.pack && : > %[1]s.idx && echo DONE`, zero))
		if !strings.Contains(said, ffff+".idx.keel-refused") || !strings.Contains(said, "git verify-pack fails on the pair") {
			t.Errorf("the forged pack is not verified and moved aside:\n%s", said)
		}
		outside(t, w, said)
	})
	t.Run("past the budget", func(t *testing.T) {
		sandbox.SetMaxNewPackBytes(t, 4096)
		w, forge := setup(t)
		said := w.sayDone(t, forge+` && echo DONE`)
		if !strings.Contains(said, ffff+".pack.keel-refused") || !strings.Contains(said, "git verify-pack -v") {
			t.Errorf("the unverified pack is not moved aside, saying how to take it back:\n%s", said)
		}
		outside(t, w, said)
	})
}

// TestGitFirstSight: a keel process takes the object store as it first sees it as what
// later releases compare with; an object forged before (keel killed while a command's
// background job forged it) is found by asking git for the objects on the way from the
// refs to the read-only paths, here HEAD's tree of .claude/ rewritten in place.
func TestGitFirstSight(t *testing.T) { forEachLauncher(t, testGitFirstSight) }

func testGitFirstSight(t *testing.T) {
	w := newObjWorld(t)
	_, raw, real := w.evilTree(t)
	var b bytes.Buffer
	z := zlib.NewWriter(&b)
	fmt.Fprintf(z, "tree %d\x00%s", len(raw), raw)
	z.Close()
	loose := filepath.Join(w.ws, ".git", "objects", real[:2], real[2:])
	os.Chmod(loose, 0o644)
	write(t, loose, b.String())
	if out := gitOut(t, w.ws, "cat-file", "-p", "HEAD:.claude/settings.json"); !strings.Contains(out, "SessionStart") {
		t.Fatalf("the forged tree is not what git reads: %q", out)
	}
	said := w.sayDone(t, `echo DONE`)
	if !strings.Contains(said, "HEAD:.claude (object "+real) {
		t.Errorf("the forged tree found at first sight is not named:\n%s", said)
	}
	// The control: the next release, the store unchanged, says nothing more.
	if said := w.sayDone(t, `echo DONE`); said != "" {
		t.Errorf("a second release said:\n%s", said)
	}
}
