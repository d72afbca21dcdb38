package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/gittest"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/runconfig"
	"github.com/keel-dev/keel/internal/sandbox"
	"github.com/keel-dev/keel/internal/settings"
)

// trackedSaid is what a session in repo with the user settings user says of the masked files
// git tracks: its notices that mention git, and `keel doctor`'s lines by name; and what the
// sandbox of such a session hides.
func trackedSaid(t *testing.T, repo string, user string) (notice string, doctor map[string]string, covers []sandbox.ObjectCover) {
	t.Helper()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(user), 0o600); err != nil {
		t.Fatal(err)
	}
	sc := &scripted.Scenario{Rules: []scripted.Rule{{When: scripted.Match{UserText: "hello"}, Reply: []scripted.Block{scripted.Text("hi")}}}}
	h := newHarness(t, sc, Options{Home: home, Cwd: repo})
	for _, e := range h.send(t, "hello") {
		if n, ok := e.(event.Notice); ok && strings.Contains(n.Text, "git") {
			notice += n.Text
		}
	}
	st, err := settings.Load(settings.Options{Env: settings.Env{Home: home}, ProjectDir: repo})
	if err != nil {
		t.Fatal(err)
	}
	findings, err := SandboxDoctor(t.Context(), runconfig.Config{Cwd: repo, Home: home}, st)
	if err != nil {
		t.Fatal(err)
	}
	doctor = map[string]string{}
	for _, f := range findings {
		doctor[f.Name] = f.Detail
	}
	sb, err := NewSandbox(runconfig.Config{Cwd: repo, Home: home}, st)
	if err != nil {
		t.Fatal(err)
	}
	return notice, doctor, sb.HideObjects()
}

// TestTrackedMaskedSaid: a masked file that git tracks (a user-level Read deny rule's, a
// filesystem.denyRead path's) is named by `keel doctor` — hidden from git inside the sandbox
// where it can hide its blobs, else in the session's notice and doctor's "masked in git" as
// readable through git — and a masked file git does not track, or a tracked one no mask
// covers, is not.
func TestTrackedMaskedSaid(t *testing.T) {
	repo := gittest.New(t)
	repo.Write("secrets/token", "TRACKED-SECRET\n")
	repo.Write(".env", "TRACKED-ENV\n")
	repo.Write("main.txt", "open\n")
	repo.Commit("secrets")
	if err := os.WriteFile(filepath.Join(repo.Dir, "secrets", "local"), []byte("untracked"), 0o600); err != nil {
		t.Fatal(err)
	}
	user := `{"permissions":{"deny":["Read(./secrets/**)"]},"sandbox":{"enabled":true,"filesystem":{"denyRead":["./.env"]}}}`
	check := func(where, text, want string) {
		t.Helper()
		for _, w := range []string{filepath.Join(repo.Dir, "secrets", "token"), filepath.Join(repo.Dir, ".env"), want} {
			if !strings.Contains(text, w) {
				t.Errorf("%s: %q lacks %q", where, text, w)
			}
		}
		for _, not := range []string{"secrets/local", "main.txt", "README"} {
			if strings.Contains(text, not) {
				t.Errorf("%s: %q names %s", where, text, not)
			}
		}
	}
	notice, doctor, covers := trackedSaid(t, repo.Dir, user)
	t.Logf("the sandbox hides: %+v", covers)
	if len(covers) == 1 && covers[0].Why == "" {
		// This machine's sandbox hides them: nothing to say but doctor's line.
		if notice != "" {
			t.Errorf("notice = %q, want none: the blobs are hidden", notice)
		}
		check("keel doctor", doctor["hidden from git"], "hidden from git inside the sandbox")
		if d, ok := doctor["masked in git"]; ok {
			t.Errorf("doctor says they stay readable: %q", d)
		}
		return
	}
	check("notice", notice, "stays readable through git inside the sandbox")
	check("keel doctor", doctor["masked in git"], "stays readable through git inside the sandbox")
}

// TestTrackedMaskedFallback: a repository whose masked files' blobs the sandbox cannot hide
// — a shared clone, whose objects may sit in the store its alternates name — is named in the
// session's notice and doctor's "masked in git", with why, as readable through git.
func TestTrackedMaskedFallback(t *testing.T) {
	src := gittest.New(t)
	src.Write("secrets/token", "TRACKED-SECRET\n")
	src.Commit("secrets")
	dir := filepath.Join(t.TempDir(), "clone")
	gittest.Run(t, filepath.Dir(dir), "clone", "-q", "--shared", src.Dir, dir)
	user := `{"permissions":{"deny":["Read(./secrets/**)"]},"sandbox":{"enabled":true}}`
	notice, doctor, _ := trackedSaid(t, dir, user)
	for where, text := range map[string]string{"notice": notice, "keel doctor": doctor["masked in git"]} {
		for _, want := range []string{filepath.Join(dir, "secrets", "token"), "stays readable through git inside the sandbox", "could not hide"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: %q lacks %q", where, text, want)
			}
		}
	}
	if d, ok := doctor["hidden from git"]; ok {
		t.Errorf("doctor says they are hidden: %q", d)
	}
}

// TestTrackedMaskedSealed: a repository whose history keel cannot walk (a branch's commit
// whose parent is missing), which the sandbox masks git's objects of whole, is named with
// why and how to repair it in the session's notice and doctor's "git sealed".
func TestTrackedMaskedSealed(t *testing.T) {
	repo := gittest.New(t)
	repo.Write("secrets/token", "TRACKED-SECRET\n")
	repo.Commit("secrets")
	commit := "tree " + repo.Git("rev-parse", "HEAD^{tree}") + "\nparent 3333333333333333333333333333333333333333\nauthor a <a@b> 0 +0000\ncommitter a <a@b> 0 +0000\n\nbroken\n"
	if err := os.WriteFile(filepath.Join(repo.Dir, "broken"), []byte(commit), 0o600); err != nil {
		t.Fatal(err)
	}
	id := repo.Git("hash-object", "-t", "commit", "-w", "--literally", "broken")
	if err := os.Remove(filepath.Join(repo.Dir, "broken")); err != nil {
		t.Fatal(err)
	}
	repo.Git("update-ref", "refs/heads/broken", id)
	user := `{"permissions":{"deny":["Read(./secrets/**)"]},"sandbox":{"enabled":true}}`
	notice, doctor, covers := trackedSaid(t, repo.Dir, user)
	if len(covers) != 1 || covers[0].Why != "" {
		t.Skipf("this machine's sandbox cannot hide git's objects: %+v", covers)
	}
	for where, text := range map[string]string{"notice": notice, "keel doctor": doctor["git sealed"]} {
		for _, want := range []string{repo.Dir, "masked whole", "git fsck"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: %q lacks %q", where, text, want)
			}
		}
	}
}
