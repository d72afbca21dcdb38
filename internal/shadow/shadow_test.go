package shadow_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/gittest"
	"github.com/keel-dev/keel/internal/shadow"
	"github.com/keel-dev/keel/internal/waittest"
)

// entry is one thing in a directory tree, as a restore must give it back.
type entry struct {
	Mode fs.FileMode
	// Content is a file's bytes (hashed past 64 bytes) or a link's target.
	Content string
}

// tree records every file, link and directory below dir; skip names paths (relative, slash)
// to leave out with everything below them.
func tree(t *testing.T, dir string, skip ...string) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		for _, s := range skip {
			if rel == s {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		e := entry{Mode: info.Mode()}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			e.Content, err = os.Readlink(p)
		case info.Mode().IsRegular():
			var b []byte
			b, err = os.ReadFile(p)
			e.Content = string(b)
			if len(b) > 64 {
				sum := sha256.Sum256(b)
				e.Content = "sha256:" + hex.EncodeToString(sum[:])
			}
		}
		if rel != "." {
			out[rel] = e
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sh(t *testing.T, dir, script string) {
	t.Helper()
	cmd := exec.Command("sh", "-ec", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
}

func open(t *testing.T, dir, home, session string) *shadow.Repo {
	t.Helper()
	r, err := shadow.Open(t.Context(), dir, shadow.Options{Home: home, Session: session, MaxFileBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// project is a Go module in a git repository, with what makes byte-exact restores hard: a
// .gitattributes asking for CRLF conversion, an executable script, a symbolic link, an
// ignored file.
func project(t *testing.T) *gittest.Repo {
	repo := gittest.New(t)
	repo.Write("go.mod", "module example.com/hello\n\ngo 1.22\n")
	repo.Write("main.go", "package main\n\nfunc main() { println(\"hello\") }\n")
	repo.Write("data.txt", "line one\nline two\n")
	repo.Write("crlf.txt", "mixed\r\nendings\n")
	repo.Write(".gitattributes", "*.txt text eol=crlf\n*.go filter=never-defined\n")
	repo.Write(".gitignore", "*.log\n")
	repo.Write("script.sh", "#!/bin/sh\necho hi\n")
	repo.Write("debug.log", "ignored\n")
	sh(t, repo.Dir, "chmod 755 script.sh && ln -s main.go link")
	repo.Commit("project")
	return repo
}

// TestRestoreAfterShellTurn: a turn that edits with sed -i, deletes with rm, builds with go
// build, changes a mode and makes a directory is undone byte for byte; the ignored file keeps
// what the turn wrote, and the user's .git is never touched.
func TestRestoreAfterShellTurn(t *testing.T) {
	repo := project(t)
	home := t.TempDir()
	userGit := tree(t, filepath.Join(repo.Dir, ".git"))
	before := tree(t, repo.Dir, ".git")

	r := open(t, repo.Dir, home, "s1")
	cp0, err := r.Capture(t.Context(), "prompt 1")
	if err != nil {
		t.Fatal(err)
	}
	sh(t, repo.Dir, `sed -i 's/hello/bye/' main.go
rm data.txt
go build
chmod -x script.sh
printf 'rewritten\n' > crlf.txt
mkdir -p out/deep && echo made > out/deep/new.txt
echo more >> debug.log`)
	if _, err := os.Stat(filepath.Join(repo.Dir, "hello")); err != nil {
		t.Fatalf("go build made no binary: %v", err)
	}
	cp1, err := r.Capture(t.Context(), "prompt 2")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"hello"}, cp1.Large); diff != "" {
		t.Errorf("large files of the second checkpoint, mismatch (-want +got):\n%s", diff)
	}
	afterTurn := tree(t, repo.Dir, ".git", "hello")

	res, err := r.Restore(t.Context(), cp0)
	if err != nil {
		t.Fatal(err)
	}
	want := before
	want["debug.log"] = entry{Mode: 0o644, Content: "ignored\nmore\n"}
	if diff := cmp.Diff(want, tree(t, repo.Dir, ".git")); diff != "" {
		t.Errorf("tree after restore, mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"hello"}, res.Removed); diff != "" {
		t.Errorf("removed large files, mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(userGit, tree(t, filepath.Join(repo.Dir, ".git"))); diff != "" {
		t.Errorf("the user's .git changed, mismatch (-want +got):\n%s", diff)
	}
	if cp, err := r.Capture(t.Context(), "after the rewind"); err != nil || cp.Tree != cp0.Tree || cp.Commit == res.Before.Commit {
		t.Errorf("capture after the restore: %+v, %v; want a new checkpoint of tree %s", cp, err, cp0.Tree)
	}

	// The state before the restore is a checkpoint too: restoring it undoes the rewind, all
	// but the binary, too large to have been kept.
	undo, err := r.Restore(t.Context(), res.Before)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(afterTurn, tree(t, repo.Dir, ".git")); diff != "" {
		t.Errorf("tree after undoing the restore, mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"hello"}, undo.NotRestored); diff != "" {
		t.Errorf("files not restored, mismatch (-want +got):\n%s", diff)
	}
}

func TestChangesAndDiffOfATurn(t *testing.T) {
	repo := project(t)
	r := open(t, repo.Dir, t.TempDir(), "s1")
	cp0, err := r.Capture(t.Context(), "prompt 1")
	if err != nil {
		t.Fatal(err)
	}
	sh(t, repo.Dir, `sed -i 's/hello/bye/' main.go
rm data.txt
chmod -x script.sh
mkdir out && echo made > out/new.txt
echo more >> debug.log`)
	cp1, err := r.Capture(t.Context(), "prompt 2")
	if err != nil {
		t.Fatal(err)
	}
	if cp1.Label != "prompt 2" {
		t.Errorf("label %q", cp1.Label)
	}
	changes, err := r.Changes(t.Context(), cp0, cp1)
	if err != nil {
		t.Fatal(err)
	}
	want := []shadow.Change{{"D", "data.txt"}, {"M", "main.go"}, {"A", "out/new.txt"}, {"M", "script.sh"}}
	if diff := cmp.Diff(want, changes); diff != "" {
		t.Errorf("changes, mismatch (-want +got):\n%s", diff)
	}
	patch, err := r.Diff(t.Context(), cp0, cp1)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"-func main() { println(\"hello\") }", "+func main() { println(\"bye\") }", "old mode 100755\nnew mode 100644", "+made"} {
		if !strings.Contains(patch, s) {
			t.Errorf("diff lacks %q:\n%s", s, patch)
		}
	}
	again, err := r.Capture(t.Context(), "prompt 3")
	if err != nil || again.Commit != cp1.Commit {
		t.Errorf("capture of an unchanged directory: %+v, %v; want checkpoint %s again", again, err, cp1.Commit)
	}
	read, err := r.Checkpoint(t.Context(), cp1.Commit)
	if err != nil || read.Tree != cp1.Tree || read.Label != "prompt 2" {
		t.Errorf("Checkpoint(%s) = %+v, %v", cp1.Commit, read, err)
	}
	if _, err := r.Restore(t.Context(), cp0); err != nil {
		t.Fatal(err)
	}
	if cp, err := r.Capture(t.Context(), "after the rewind"); err != nil || cp.Tree != cp0.Tree {
		t.Errorf("capture after a restore: %+v, %v; want the restored tree %s", cp, err, cp0.Tree)
	}
}

// TestSessionsShareTheRepository: sessions in one directory capture at once, each with its
// own index and checkpoints, and see each other's objects.
func TestSessionsShareTheRepository(t *testing.T) {
	repo := project(t)
	home := t.TempDir()
	first := open(t, repo.Dir, home, "s1")
	if _, err := first.Capture(t.Context(), "first"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	cps := make([]shadow.Checkpoint, 4)
	for i := range cps {
		r := open(t, repo.Dir, home, "s"+string(rune('a'+i)))
		wg.Go(func() {
			var err error
			if cps[i], err = r.Capture(waittest.Context(t), "concurrent"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, cp := range cps[1:] {
		if cp.Tree != cps[0].Tree {
			t.Errorf("sessions captured different trees of one directory: %s and %s", cps[0].Tree, cp.Tree)
		}
	}
	sh(t, repo.Dir, "echo changed > data.txt")
	other := open(t, repo.Dir, home, "sa")
	if _, err := other.Restore(t.Context(), cps[2]); err != nil {
		t.Fatalf("a session restores another's checkpoint: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(repo.Dir, "data.txt")); string(b) != "line one\nline two\n" {
		t.Errorf("data.txt after restore: %q", b)
	}
}

func TestBadInput(t *testing.T) {
	repo := project(t)
	home := t.TempDir()
	if _, err := shadow.Open(t.Context(), repo.Dir, shadow.Options{Home: home, Session: "../x"}); err == nil || !strings.Contains(err.Error(), "session") {
		t.Errorf("bad session name: %v", err)
	}
	if _, err := shadow.Open(t.Context(), filepath.Join(repo.Dir, "missing"), shadow.Options{Home: home, Session: "s"}); err == nil {
		t.Error("a missing directory opened")
	}
	r := open(t, repo.Dir, home, "s1")
	for _, commit := range []string{"HEAD", "--help", strings.Repeat("a", 40)} {
		if _, err := r.Restore(t.Context(), shadow.Checkpoint{Commit: commit}); err == nil {
			t.Errorf("restore to %q succeeded", commit)
		}
	}
	small, err := shadow.Open(t.Context(), repo.Dir, shadow.Options{Home: t.TempDir(), Session: "s", MaxFiles: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := small.Capture(t.Context(), "too many"); err == nil || !strings.Contains(err.Error(), "more than the 3") {
		t.Errorf("capture over MaxFiles: %v", err)
	}
}

// TestNestedRepositoryLeftOut: a repository inside the directory is not captured (git would
// record only its HEAD) and a restore leaves it alone.
func TestNestedRepositoryLeftOut(t *testing.T) {
	repo := project(t)
	nested := filepath.Join(repo.Dir, "vendor", "lib")
	if err := os.MkdirAll(nested, 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, nested, "init", "-q")
	sh(t, nested, "echo v1 > lib.txt")
	r := open(t, repo.Dir, t.TempDir(), "s1")
	cp, err := r.Capture(t.Context(), "with nested")
	if err != nil {
		t.Fatal(err)
	}
	sh(t, nested, "echo v2 > lib.txt")
	if _, err := r.Restore(t.Context(), cp); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(nested, "lib.txt")); string(b) != "v2\n" {
		t.Errorf("nested repository's file after restore: %q, want it left alone", b)
	}
}
