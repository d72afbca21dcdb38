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
	"github.com/keel-dev/keel/internal/settings"
)

// TestTrackedMaskedSaid: a masked file that git tracks (a user-level Read deny rule's, a
// filesystem.denyRead path's) is named in the session's notice and in `keel doctor` — its
// committed content stays readable through git inside the sandbox — and a masked file git
// does not track, or a tracked one no mask covers, is not.
func TestTrackedMaskedSaid(t *testing.T) {
	repo := gittest.New(t)
	repo.Write("secrets/token", "TRACKED-SECRET\n")
	repo.Write(".env", "TRACKED-ENV\n")
	repo.Write("main.txt", "open\n")
	repo.Commit("secrets")
	if err := os.WriteFile(filepath.Join(repo.Dir, "secrets", "local"), []byte("untracked"), 0o600); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	user := `{"permissions":{"deny":["Read(./secrets/**)"]},"sandbox":{"enabled":true,"filesystem":{"denyRead":["./.env"]}}}`
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(user), 0o600); err != nil {
		t.Fatal(err)
	}
	check := func(where, text string) {
		t.Helper()
		for _, want := range []string{filepath.Join(repo.Dir, "secrets", "token"), filepath.Join(repo.Dir, ".env"), "stays readable through git inside the sandbox"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: %q lacks %q", where, text, want)
			}
		}
		for _, not := range []string{"secrets/local", "main.txt", "README"} {
			if strings.Contains(text, not) {
				t.Errorf("%s: %q names %s", where, text, not)
			}
		}
	}

	sc := &scripted.Scenario{Rules: []scripted.Rule{{When: scripted.Match{UserText: "hello"}, Reply: []scripted.Block{scripted.Text("hi")}}}}
	h := newHarness(t, sc, Options{Home: home, Cwd: repo.Dir})
	var notice string
	for _, e := range h.send(t, "hello") {
		if n, ok := e.(event.Notice); ok && strings.Contains(n.Text, "git") {
			notice += n.Text
		}
	}
	check("notice", notice)

	st, err := settings.Load(settings.Options{Env: settings.Env{Home: home}, ProjectDir: repo.Dir})
	if err != nil {
		t.Fatal(err)
	}
	findings, err := SandboxDoctor(t.Context(), runconfig.Config{Cwd: repo.Dir, Home: home}, st)
	if err != nil {
		t.Fatal(err)
	}
	var doctor string
	for _, f := range findings {
		if f.Name == "masked in git" {
			doctor = f.Detail
		}
	}
	check("keel doctor", doctor)
}
