package prompt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/gitexec"
	"github.com/keel-dev/keel/internal/gittest"
)

func TestDetectEnvironment(t *testing.T) {
	now := time.Date(2026, 3, 14, 23, 30, 0, 0, time.UTC)
	git := gitexec.Runner{Env: gittest.Env()}
	plain := t.TempDir()
	if env := DetectEnvironment(t.Context(), plain, now, git); env.GitRepo || env.Date != "2026-03-14" {
		t.Errorf("plain dir: %+v", env)
	}

	repo := gittest.New(t)
	repo.Git("checkout", "-q", "-b", "trunk")
	repo.Write("a.txt", "x")
	env := DetectEnvironment(t.Context(), repo.Dir, now, git)
	want := Environment{Cwd: repo.Dir, Platform: env.Platform, Date: "2026-03-14", GitRepo: true, Branch: "trunk", Status: "?? a.txt"}
	if diff := cmp.Diff(want, env); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	repo.Git("checkout", "-q", "--detach")
	if env := DetectEnvironment(t.Context(), repo.Dir, now, git); env.Branch != "" || !env.GitRepo {
		t.Errorf("detached: %+v; want no branch", env)
	}
	empty := t.TempDir()
	gittest.Run(t, empty, "init", "-q", "-b", "fresh")
	if env := DetectEnvironment(t.Context(), empty, now, git); env.Branch != "fresh" {
		t.Errorf("unborn branch: %+v", env)
	}
}

// TestEnvironmentRunsNoRepositoryCode: the snapshot keel takes at every session start runs
// git status, which runs core.fsmonitor; in an untrusted workspace it must not. Trusted, the
// repository's configuration applies (the positive control).
func TestEnvironmentRunsNoRepositoryCode(t *testing.T) {
	repo := gittest.New(t)
	log := filepath.Join(t.TempDir(), "ran")
	prog := filepath.Join(t.TempDir(), "fsmonitor")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho ran >> "+log+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	repo.Git("config", "core.fsmonitor", prog)
	now := time.Now()
	if env := DetectEnvironment(t.Context(), repo.Dir, now, gitexec.Runner{Env: gittest.Env()}); !env.GitRepo || env.Branch != "main" {
		t.Errorf("untrusted snapshot: %+v", env)
	}
	if _, err := os.Stat(log); err == nil {
		t.Fatal("the repository's fsmonitor ran for the environment snapshot of an untrusted workspace")
	}
	DetectEnvironment(t.Context(), repo.Dir, now, gitexec.Runner{Trusted: true, Env: gittest.Env()})
	if _, err := os.Stat(log); err != nil {
		t.Errorf("trusted: the repository's fsmonitor did not run: %v", err)
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
