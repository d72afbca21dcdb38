package prompt

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestDetectEnvironment(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	now := time.Date(2026, 3, 14, 23, 30, 0, 0, time.UTC)
	plain := t.TempDir()
	if env := DetectEnvironment(t.Context(), plain, now); env.GitRepo || env.Date != "2026-03-14" {
		t.Errorf("plain dir: %+v", env)
	}

	repo := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q", "-b", "trunk")
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := DetectEnvironment(t.Context(), repo, now)
	want := Environment{Cwd: repo, Platform: env.Platform, Date: "2026-03-14", GitRepo: true, Branch: "trunk", Status: "?? a.txt"}
	if diff := cmp.Diff(want, env); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestSnapshotCut(t *testing.T) {
	var lines []string
	for range 100 {
		lines = append(lines, " M file.go")
	}
	got := snapshot(strings.Join(lines, "\n"))
	if n := strings.Count(got, "\n"); n != maxStatusLines {
		t.Errorf("%d lines kept, want %d", n, maxStatusLines)
	}
	if !strings.HasSuffix(got, "… and 60 more") {
		t.Errorf("no remainder note: %q", got[len(got)-30:])
	}
}
