package sandbox_test

import (
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/gittest"
	"github.com/keel-dev/keel/internal/sandbox"
)

// maskedWorld is a world over repo, whose secrets/ a Read deny rule masks, with keel's
// directory keelHome: a new one each call, as a new keel process starts with nothing hidden
// in memory.
func maskedWorld(t *testing.T, repo *gittest.Repo, keelHome string) *world {
	t.Helper()
	in := sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{repo.Dir}, KeelHome: keelHome,
		ReadDeny: []sandbox.PathRule{{Spec: "./secrets/**", Dir: repo.Dir}}}
	w := &world{ws: repo.Dir, s: sandbox.New(sandbox.NewPolicy(in), sandbox.Options{})}
	skipWithoutSandbox(t, w.s)
	return w
}

// readsSecret runs the ways to read secretRepo's versions of the masked file through git in
// w and fails the test where one prints it.
func readsSecret(t *testing.T, w *world, ids []string, when string) {
	t.Helper()
	script := "git show HEAD:secrets/token HEAD~1:secrets/token HEAD~2:secrets/token; git log -p main"
	for _, id := range ids {
		script += "; git cat-file -p " + id
	}
	script = "{ " + script + "; } 2>&1; " + python + " -c \"$INFLATE\""
	if out := w.run(t, script, append(gittest.Env(), "INFLATE="+inflateAll)...); strings.Contains(out, "TOPSECRET") || strings.Contains(out, "LEAK") || !strings.Contains(out, "READ") {
		t.Errorf("inside the sandbox, %s:\n%s", when, out)
	}
}

// TestObjectMaskBadRef: refs a command points at nothing — a branch naming a missing object,
// a tag whose object is missing — do not stop keel from hiding the masked file's blobs from
// the next keel process, with keel's record of them or without it; git still works there.
// A history the command broke (a commit whose parent is missing) masks the object store
// whole: git fails, the secret is not shown, and HideObjects says how to repair it.
func TestObjectMaskBadRef(t *testing.T) { forEachLauncher(t, testObjectMaskBadRef) }

func testObjectMaskBadRef(t *testing.T) {
	repo, ids := secretRepo(t)
	home := sandbox.VisibleDir(t)
	env := gittest.Env()
	readsSecret(t, maskedWorld(t, repo, home), ids, "at first")
	bad := "echo 1111111111111111111111111111111111111111 > .git/refs/heads/zz && " +
		"tag=$(printf 'object 2222222222222222222222222222222222222222\\ntype commit\\ntag t\\ntagger a <a@b> 0 +0000\\n\\nm\\n' | git hash-object -t tag -w --literally --stdin) && " +
		"echo $tag > .git/refs/tags/bad && echo BROKE"
	if out := maskedWorld(t, repo, home).run(t, bad+" 2>&1", env...); !strings.Contains(out, "BROKE") {
		t.Fatalf("breaking the refs inside the sandbox:\n%s", out)
	}
	for name, home := range map[string]string{"keel's record": home, "no record": sandbox.VisibleDir(t)} {
		w := maskedWorld(t, repo, home)
		readsSecret(t, w, ids, "in a new keel process with "+name+", after the refs were broken")
		if covers := w.s.HideObjects(); len(covers) != 1 || covers[0].Why != "" || covers[0].Sealed != "" || covers[0].Blobs != 3 {
			t.Errorf("with %s, HideObjects = %+v, want 3 blobs hidden", name, covers)
		}
		if out := w.run(t, "git log --oneline main 2>&1", env...); !strings.Contains(out, "three") || strings.Contains(out, "fatal") {
			t.Errorf("with %s, git log inside the sandbox:\n%s", name, out)
		}
	}
	broken := "c=$(printf 'tree %s\\nparent 3333333333333333333333333333333333333333\\nauthor a <a@b> 0 +0000\\ncommitter a <a@b> 0 +0000\\n\\nx\\n' $(git rev-parse HEAD^{tree}) | git hash-object -t commit -w --literally --stdin) && " +
		"echo $c > .git/refs/heads/broken && echo BROKE"
	if out := maskedWorld(t, repo, home).run(t, broken+" 2>&1", env...); !strings.Contains(out, "BROKE") {
		t.Fatalf("breaking the history inside the sandbox:\n%s", out)
	}
	w := maskedWorld(t, repo, sandbox.VisibleDir(t))
	readsSecret(t, w, ids, "in a new keel process, after the history was broken")
	if covers := w.s.HideObjects(); len(covers) != 1 || !strings.Contains(covers[0].Sealed, "git fsck") {
		t.Errorf("after the history was broken, HideObjects = %+v, want the store sealed, saying how to repair it", covers)
	}
}

// TestObjectMaskJunkLoose: hundreds of versions a command commits at the masked path, each a
// loose object to cover, do not switch the hiding off for the next keel process: the
// user's versions stay hidden.
func TestObjectMaskJunkLoose(t *testing.T) { forEachLauncher(t, testObjectMaskJunkLoose) }

func testObjectMaskJunkLoose(t *testing.T) {
	repo, ids := secretRepo(t)
	home := sandbox.VisibleDir(t)
	readsSecret(t, maskedWorld(t, repo, home), ids, "at first")
	// fast-import with a high unpackLimit writes each object loose: 300 versions of the
	// masked file, each committed on the branch junk.
	junk := "for i in $(seq 300); do printf 'blob\\nmark :%d\\ndata <<E\\njunk%d\\nE\\ncommit refs/heads/junk\\n" +
		"committer a <a@b> 0 +0000\\ndata 1\\nj\\nM 100644 :%d secrets/token\\n' $i $i $i; done | " +
		"git -c fastimport.unpackLimit=100000 fast-import --quiet && " +
		"test $(git rev-list --count junk) = 300 && test $(find .git/objects/?? -type f | wc -l) -gt 900 && echo JUNK"
	if out := maskedWorld(t, repo, home).run(t, junk+" 2>&1", gittest.Env()...); !strings.Contains(out, "JUNK") {
		t.Fatalf("committing junk inside the sandbox:\n%s", out)
	}
	for name, home := range map[string]string{"keel's record": home, "no record": sandbox.VisibleDir(t)} {
		w := maskedWorld(t, repo, home)
		readsSecret(t, w, ids, "in a new keel process with "+name+", after 300 junk versions were committed")
		if covers := w.s.HideObjects(); len(covers) != 1 || covers[0].Why != "" {
			t.Errorf("with %s, HideObjects = %+v, want them hidden", name, covers)
		}
	}
}
