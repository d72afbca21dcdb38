package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/gittest"
	"github.com/keel-dev/keel/internal/sandbox"
	"github.com/keel-dev/keel/internal/settings"
)

// filler makes the secret's versions and notes.txt alike, so that git deltas one on another:
// the copy of the pack must hold notes.txt whole without the secret's blobs as its base.
var filler = strings.Repeat("a line every version of the file shares, long enough to delta\n", 40)

// inflateAll is a Python program that reads every file below .git/objects it can open,
// inflates a zlib stream from every offset and prints LEAK with the file where the raw bytes
// or what inflates holds TOPSECRET, and READ with how many files it read.
const inflateAll = `import os, zlib
n = 0
for root, _, files in os.walk('.git/objects'):
    for f in files:
        p = os.path.join(root, f)
        try:
            data = open(p, 'rb').read()
        except OSError:
            continue
        n += 1
        if b'TOPSECRET' in data:
            print('LEAK raw', p)
        for i in range(len(data)):
            try:
                out = zlib.decompressobj().decompress(data[i:])
            except zlib.error:
                continue
            if b'TOPSECRET' in out:
                print('LEAK', p, i)
                break
print('READ', n)
`

// secretRepo is a repository with secrets/token committed in three versions — the first two
// packed (with a reverse index, a bitmap and a multi-pack index), the last loose — and
// notes.txt and other.txt beside it.
func secretRepo(t *testing.T) (*gittest.Repo, []string) {
	t.Helper()
	repo := gittest.New(t)
	repo.Write("other.txt", "other\n")
	repo.Write("notes.txt", "notes\n"+filler)
	repo.Write("secrets/token", "TOPSECRET-one\n"+filler)
	repo.Commit("one")
	repo.Write("secrets/token", "TOPSECRET-two\n"+filler)
	repo.Commit("two")
	repo.Git("gc", "-q")
	repo.Git("-c", "pack.writeReverseIndex=true", "repack", "-adqb")
	repo.Git("multi-pack-index", "write", "--bitmap")
	repo.Write("secrets/token", "TOPSECRET-three\n"+filler)
	repo.Commit("three")
	var ids []string
	for _, rev := range []string{"HEAD", "HEAD~1", "HEAD~2"} {
		ids = append(ids, repo.Git("rev-parse", rev+":secrets/token"))
	}
	if _, err := os.Stat(filepath.Join(repo.Dir, ".git", "objects", ids[0][:2], ids[0][2:])); err != nil {
		t.Fatalf("the last version is not loose: %v", err)
	}
	return repo, ids
}

// TestObjectMaskGit: a masked file git tracks cannot be read through git inside the sandbox —
// not its loose object, nor its packed versions, by git show, cat-file, log -p, archive, or
// inflating the object store's files by hand — while git status, log, show and commit of
// other files work; the repository outside is untouched.
func TestObjectMaskGit(t *testing.T) { forEachLauncher(t, testObjectMaskGit) }

func testObjectMaskGit(t *testing.T) {
	for name, mask := range map[string]func(*sandbox.Input, string){
		"Read deny rule": func(in *sandbox.Input, ws string) {
			in.ReadDeny = []sandbox.PathRule{{Spec: "./secrets/**", Dir: ws}}
		},
		"denyRead": func(in *sandbox.Input, ws string) {
			in.Settings = &settings.Sandbox{}
			in.Settings.Filesystem.DenyRead = vals(filepath.Join(ws, "secrets", "token"))
		},
	} {
		t.Run(name, func(t *testing.T) {
			repo, ids := secretRepo(t)
			in := sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{repo.Dir}, KeelHome: sandbox.VisibleDir(t)}
			mask(&in, repo.Dir)
			w := &world{ws: repo.Dir, s: sandbox.New(sandbox.NewPolicy(in), sandbox.Options{})}
			skipWithoutSandbox(t, w.s)
			env := gittest.Env()
			reads := []string{
				"cat secrets/token", "git show HEAD:secrets/token", "git show HEAD~1:secrets/token",
				"git show HEAD~2:secrets/token", "git log -p", "git log --all -p --reflog",
				"git archive HEAD | tar -xO", "git diff HEAD~2 HEAD", "git stash list -p",
				python + " -c \"$INFLATE\"",
			}
			for _, id := range ids {
				reads = append(reads, "git cat-file -p "+id, "git cat-file blob "+id)
			}
			for _, r := range reads {
				out := w.run(t, r+" 2>&1", append(env, "INFLATE="+inflateAll)...)
				if strings.Contains(out, "TOPSECRET") || strings.Contains(out, "LEAK") {
					t.Errorf("%s inside the sandbox read the masked file:\n%s", r, out)
				}
				if strings.Contains(r, "INFLATE") && !strings.Contains(out, "READ ") {
					t.Errorf("the object store was not read by hand:\n%s", out)
				}
			}
			works := [][2]string{
				{"git status --short", "secrets/token"},
				{"git log --oneline", "two"},
				{"git show HEAD:other.txt", "other"},
				{"git show HEAD:notes.txt | tail -1", "long enough to delta"},
				{"git diff HEAD~2 HEAD -- other.txt notes.txt && echo DIFF", "DIFF"},
				// What reads a pack's reverse index and bitmap: the original's are not read.
				{"git cat-file --batch-all-objects --batch-check='%(objectsize:disk)' >/dev/null && echo ALL", "ALL"},
				{"git rev-list --count --use-bitmap-index HEAD~1", "3"},
				{"echo more >> other.txt && git commit -qm more other.txt && git log -1 --format=%s", "more"},
			}
			for _, c := range works {
				out := w.run(t, c[0]+" 2>&1", env...)
				if !strings.Contains(out, c[1]) || strings.Contains(out, "error:") || strings.Contains(out, "fatal:") {
					t.Errorf("%s inside the sandbox: want %q, no error:\n%s", c[0], c[1], out)
				}
			}
			// Outside, the repository is whole.
			repo.Git("fsck", "--no-progress")
			if got := repo.Git("cat-file", "-p", ids[1]); !strings.Contains(got, "TOPSECRET-two") {
				t.Errorf("outside, git show = %q", got)
			}
			covers := w.s.HideObjects()
			if len(covers) != 1 || covers[0].Why != "" || covers[0].Blobs != 3 {
				t.Errorf("HideObjects = %+v, want 3 blobs hidden in one repository", covers)
			}
		})
	}
}

// TestObjectMaskCommitBeside: a masked file at the top of the working tree (.env), its blob
// hidden, does not stop commits inside: git writes the root tree, which holds it, and finds
// the blob (keel's unreadable stand-in) without reading it.
func TestObjectMaskCommitBeside(t *testing.T) { forEachLauncher(t, testObjectMaskCommitBeside) }

func testObjectMaskCommitBeside(t *testing.T) {
	repo := gittest.New(t)
	repo.Write(".env", "TOPSECRET=env\n")
	repo.Write("other.txt", "other\n")
	repo.Commit("env")
	repo.Git("gc", "-q")
	sb := &settings.Sandbox{}
	sb.Filesystem.DenyRead = vals(filepath.Join(repo.Dir, ".env"))
	in := sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Settings: sb, Dirs: []string{repo.Dir}, KeelHome: sandbox.VisibleDir(t)}
	w := &world{ws: repo.Dir, s: sandbox.New(sandbox.NewPolicy(in), sandbox.Options{})}
	skipWithoutSandbox(t, w.s)
	env := gittest.Env()
	if out := w.run(t, "git show HEAD:.env 2>&1; git read-tree HEAD && git write-tree", env...); strings.Contains(out, "TOPSECRET") || strings.Contains(out, "error") {
		t.Errorf("inside the sandbox:\n%s", out)
	}
	script := "echo more >> other.txt && git commit -qm paths other.txt && echo again >> other.txt && git add other.txt && git commit -qm staged && git log --format=%s -2"
	if out := w.run(t, script+" 2>&1", env...); !strings.Contains(out, "staged\npaths") {
		t.Errorf("commits inside the sandbox:\n%s", out)
	}
	if got := repo.Git("show", "HEAD:.env"); got != "TOPSECRET=env" {
		t.Errorf("outside, the commit made inside holds .env = %q", got)
	}
}

// TestObjectMaskHistoryRewritten: a command that makes the masked file's blobs unreachable —
// history rewritten without it, the old branch deleted, the reflogs expired — does not have them shown to the next: keel keeps hiding what it hid.
func TestObjectMaskHistoryRewritten(t *testing.T) {
	repo, ids := secretRepo(t)
	in := sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{repo.Dir}, KeelHome: sandbox.VisibleDir(t),
		ReadDeny: []sandbox.PathRule{{Spec: "./secrets/**", Dir: repo.Dir}}}
	w := &world{ws: repo.Dir, s: sandbox.New(sandbox.NewPolicy(in), sandbox.Options{})}
	skipWithoutSandbox(t, w.s)
	env := gittest.Env()
	rewrite := "git checkout -q --orphan fresh && git rm -r -q --cached secrets && git commit -qm fresh && " +
		"{ git branch -q -D main 2>/dev/null; git reflog expire --expire=now --all; } && " +
		"git log --all --reflog --oneline -- secrets | wc -l"
	if out := w.run(t, rewrite, env...); strings.TrimSpace(out) != "0" {
		t.Fatalf("the rewrite inside the sandbox:\n%s", out)
	}
	for _, id := range ids {
		if out := w.run(t, "git cat-file -p "+id+" 2>&1", env...); strings.Contains(out, "TOPSECRET") {
			t.Errorf("after the rewrite, git cat-file -p %s read the masked file:\n%s", id, out)
		}
	}
	if out := w.run(t, python+" -c \"$INFLATE\" 2>&1", append(env, "INFLATE="+inflateAll)...); strings.Contains(out, "LEAK") || !strings.Contains(out, "READ") {
		t.Errorf("after the rewrite, the object store read by hand:\n%s", out)
	}
}

// TestObjectMaskChangedOutside: what the user commits or packs outside between commands is
// hidden from the next command too — new versions of the masked file, loose, then packed
// with the rest by git gc, then one staged.
func TestObjectMaskChangedOutside(t *testing.T) {
	repo, _ := secretRepo(t)
	in := sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{repo.Dir}, KeelHome: sandbox.VisibleDir(t),
		ReadDeny: []sandbox.PathRule{{Spec: "./secrets/**", Dir: repo.Dir}}}
	w := &world{ws: repo.Dir, s: sandbox.New(sandbox.NewPolicy(in), sandbox.Options{})}
	skipWithoutSandbox(t, w.s)
	env := gittest.Env()
	read := "git show HEAD:secrets/token HEAD~1:secrets/token 2>&1; git status --short 2>&1; " + python + " -c \"$INFLATE\""
	for _, change := range []func(){
		func() {},
		func() {
			repo.Write("secrets/token", "TOPSECRET-four\n")
			repo.Commit("four")
			repo.Write("secrets/token", "TOPSECRET-five\n")
			repo.Commit("five")
		},
		func() { repo.Git("gc", "-q") },
		func() { repo.Write("secrets/token", "TOPSECRET-staged\n"); repo.Git("add", "secrets") },
	} {
		change()
		if out := w.run(t, read, append(env, "INFLATE="+inflateAll)...); strings.Contains(out, "TOPSECRET") || strings.Contains(out, "LEAK") || !strings.Contains(out, "READ") {
			t.Errorf("inside the sandbox, after %s:\n%s", repo.Git("log", "-1", "--format=%s"), out)
		}
	}
}

// TestObjectMaskRemovedFile: a file a Read deny glob matches that was committed and removed
// since — no mask stands where it was — has its blob hidden too, in a repository where the
// rule masks a file now.
func TestObjectMaskRemovedFile(t *testing.T) {
	repo := gittest.New(t)
	repo.Write("keys/old.pem", "TOPSECRET-removed\n")
	repo.Write("keys/current.pem", "TOPSECRET-current\n")
	repo.Commit("keys")
	repo.Git("rm", "-q", "keys/old.pem")
	repo.Commit("remove old.pem")
	repo.Git("gc", "-q")
	in := sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{repo.Dir}, KeelHome: sandbox.VisibleDir(t),
		ReadDeny: []sandbox.PathRule{{Spec: "*.pem", Dir: repo.Dir}}}
	w := &world{ws: repo.Dir, s: sandbox.New(sandbox.NewPolicy(in), sandbox.Options{})}
	skipWithoutSandbox(t, w.s)
	script := "git show HEAD~1:keys/old.pem HEAD:keys/current.pem 2>&1; git log -p 2>&1; " + python + " -c \"$INFLATE\""
	if out := w.run(t, script, append(gittest.Env(), "INFLATE="+inflateAll)...); strings.Contains(out, "TOPSECRET") || strings.Contains(out, "LEAK") || !strings.Contains(out, "READ") {
		t.Errorf("inside the sandbox:\n%s", out)
	}
}

// TestObjectMaskFilteredPack: the copy of a pack keel binds holds every object of the
// original but the masked file's blobs, and no delta on them as a base: git verify-pack
// finds every object whole.
func TestObjectMaskFilteredPack(t *testing.T) {
	repo, ids := secretRepo(t)
	keelHome := t.TempDir()
	in := sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{repo.Dir}, KeelHome: keelHome,
		ReadDeny: []sandbox.PathRule{{Spec: "./secrets/**", Dir: repo.Dir}}}
	s := sandbox.New(sandbox.NewPolicy(in), sandbox.Options{})
	skipWithoutSandbox(t, s)
	if covers := s.HideObjects(); len(covers) != 1 || covers[0].Why != "" {
		t.Fatalf("HideObjects = %+v", covers)
	}
	copies, _ := filepath.Glob(filepath.Join(keelHome, "sandbox", "objects", "*.idx"))
	if len(copies) != 1 {
		t.Fatalf("pack copies: %v", copies)
	}
	orig, _ := filepath.Glob(filepath.Join(repo.Dir, ".git", "objects", "pack", "pack-*.idx"))
	listing := func(idx string) map[string]bool {
		out := map[string]bool{}
		for _, l := range strings.Split(repo.Git("verify-pack", "-v", idx), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && len(f[0]) == 40 {
				out[f[0]] = true
			}
		}
		return out
	}
	was, now := listing(orig[0]), listing(copies[0])
	for _, id := range ids[1:] {
		if !was[id] || now[id] {
			t.Errorf("%s: in the pack %v, in the copy %v; want only in the pack", id, was[id], now[id])
		}
	}
	if len(now) != len(was)-2 {
		t.Errorf("the copy holds %d objects, the pack %d: want all but the 2 blobs", len(now), len(was))
	}
	notes := repo.Git("rev-parse", "HEAD:notes.txt")
	if !now[notes] {
		t.Errorf("the copy lacks notes.txt's blob %s", notes)
	}
}

// TestObjectMaskFallback: where keel cannot hide the blobs — the Landlock-only form, which
// makes no mounts — HideObjects says why for that repository, and nothing is hidden: its
// masked files stay readable through git, as the notice then says. Where a command could
// bring that about — packs past the bound — the object store is masked whole instead.
func TestObjectMaskFallback(t *testing.T) {
	for name, c := range map[string]struct {
		setup func(t *testing.T)
		why   string
	}{
		"landlock only":   {setup: func(t *testing.T) { sandbox.NoUserNamespaces(t) }, why: "Landlock-only"},
		"packs too large": {setup: func(t *testing.T) { sandbox.SetMaxFilterPackBytes(t, 16) }, why: "past the"},
	} {
		t.Run(name, func(t *testing.T) {
			c.setup(t)
			repo, _ := secretRepo(t)
			in := sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{repo.Dir}, KeelHome: t.TempDir(),
				ReadDeny: []sandbox.PathRule{{Spec: "./secrets/**", Dir: repo.Dir}}}
			w := &world{ws: repo.Dir, s: sandbox.New(sandbox.NewPolicy(in), sandbox.Options{})}
			if err := w.s.Available(); err != nil {
				t.Skipf("the sandbox cannot start here: %v", err)
			}
			if name == "landlock only" && sandbox.Launcher(w.s) != "landlock-only" {
				t.Skip("Landlock is not available here")
			}
			covers := w.s.HideObjects()
			if name == "packs too large" && (len(covers) != 1 || covers[0].Sealed == "") {
				t.Errorf("packs a command can make: HideObjects = %+v, want the store sealed", covers)
			}
			if len(covers) != 1 || !strings.Contains(covers[0].Why+covers[0].Sealed, c.why) || covers[0].Trees[0] != repo.Dir {
				t.Fatalf("HideObjects = %+v, want %s named with %q", covers, repo.Dir, c.why)
			}
			out := w.run(t, "git show HEAD~1:secrets/token HEAD:other.txt 2>&1", gittest.Env()...)
			switch {
			case covers[0].Why != "" && !strings.Contains(out, "TOPSECRET-two"):
				t.Errorf("with nothing hidden, git show inside = %q", out)
			case covers[0].Sealed != "" && (strings.Contains(out, "TOPSECRET") || strings.Contains(out, "other")):
				t.Errorf("with the object store sealed, git show inside = %q", out)
			}
		})
	}
}

// TestObjectMaskPseudoRefs: a version of the masked file that only a pseudo-ref or an
// operation's state reaches — ORIG_HEAD after a reset whose reflog expired, FETCH_HEAD's
// second line, CHERRY_PICK_HEAD, the tree AUTO_MERGE names, a cherry-pick's to-do list's
// abbreviated commit — is hidden from git inside too, there before the first command or
// written outside between two.
func TestObjectMaskPseudoRefs(t *testing.T) { forEachLauncher(t, testObjectMaskPseudoRefs) }

func testObjectMaskPseudoRefs(t *testing.T) {
	repo := gittest.New(t)
	repo.Write("other.txt", "other\n")
	repo.Write(".gitignore", "secrets/\n")
	repo.Commit("base")
	base := repo.Head()
	// side commits a version of the masked file on a branch then deleted: nothing reaches it.
	side := func(secret string) string {
		repo.Git("checkout", "-q", "-b", "side", base)
		repo.Write("secrets/token", secret+"\n")
		repo.Git("add", "-f", "secrets/token")
		repo.Commit("side")
		id := repo.Head()
		repo.Git("checkout", "-q", "main")
		repo.Git("branch", "-q", "-D", "side")
		return id
	}
	fetched, picked, merged, todo := side("TOPSECRET-fetch"), side("TOPSECRET-pick"), side("TOPSECRET-automerge"), side("TOPSECRET-todo")
	autoMerge := repo.Git("rev-parse", merged+"^{tree}")
	repo.Write("secrets/token", "TOPSECRET-orig\n")
	repo.Git("add", "-f", "secrets/token")
	repo.Commit("orig")
	repo.Git("reset", "-q", base) // ORIG_HEAD: the commit holding TOPSECRET-orig
	repo.Git("reflog", "expire", "--expire=now", "--all")
	if out := repo.Git("log", "--all", "--reflog", "--oneline", "--", "secrets"); out != "" {
		t.Fatalf("a ref still reaches the secret:\n%s", out)
	}
	in := sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{repo.Dir}, KeelHome: sandbox.VisibleDir(t),
		ReadDeny: []sandbox.PathRule{{Spec: "./secrets/**", Dir: repo.Dir}}}
	w := &world{ws: repo.Dir, s: sandbox.New(sandbox.NewPolicy(in), sandbox.Options{})}
	skipWithoutSandbox(t, w.s)
	env := gittest.Env()
	reads := "git cat-file -p ORIG_HEAD:secrets/token 2>&1; git show ORIG_HEAD 2>&1"
	if out := w.run(t, reads, env...); strings.Contains(out, "TOPSECRET") {
		t.Errorf("inside the sandbox, through ORIG_HEAD:\n%s", out)
	}
	// Written outside between commands, as git fetch, a merge with conflicts and a stopped
	// cherry-pick leave them; CHERRY_PICK_HEAD alone, the last, changes no ref keel watched.
	git := filepath.Join(repo.Dir, ".git")
	fetchHead := base + "\t\tbranch 'main' of /elsewhere\n" + fetched + "\tnot-for-merge\tbranch 'x' of /elsewhere\n"
	// Each step's blob is reachable from nothing before it (inflating the store by hand would
	// find it, as for any blob nothing reaches): the store is read by hand after the last.
	for i, step := range []struct{ files, read string }{
		{"FETCH_HEAD=" + fetchHead + ",AUTO_MERGE=" + autoMerge, "git cat-file -p " + fetched + ":secrets/token; git cat-file -p AUTO_MERGE:secrets/token"},
		{"CHERRY_PICK_HEAD=" + picked, "git cat-file -p CHERRY_PICK_HEAD:secrets/token; git log -p CHERRY_PICK_HEAD"},
		{"sequencer/todo=pick " + todo[:10] + " side", "git cat-file -p " + todo + ":secrets/token"},
	} {
		for f := range strings.SplitSeq(step.files, ",") {
			name, text, _ := strings.Cut(f, "=")
			if err := os.MkdirAll(filepath.Dir(filepath.Join(git, name)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(git, name), []byte(text+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		reads += "; " + step.read
		script := "{ " + reads + "; } 2>&1"
		if i == 2 {
			script += "; " + python + " -c \"$INFLATE\""
		}
		if out := w.run(t, script, append(env, "INFLATE="+inflateAll)...); strings.Contains(out, "TOPSECRET") || strings.Contains(out, "LEAK") || i == 2 && !strings.Contains(out, "READ ") {
			t.Errorf("inside the sandbox, after %s is written:\n%s", step.files, out)
		}
	}
	if out := w.run(t, "git log --oneline -1 2>&1", env...); !strings.Contains(out, "base") {
		t.Errorf("git log inside the sandbox: %s", out)
	}
	if got := repo.Git("cat-file", "-p", "CHERRY_PICK_HEAD:secrets/token"); got != "TOPSECRET-pick" {
		t.Errorf("outside, CHERRY_PICK_HEAD's secret = %q", got)
	}
}
