package worktree

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/gittest"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/settings"
)

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"feature/login": "feature+login",
		"a/b/c":         "a+b+c",
		"agent-abc":     "agent-abc",
		"has space":     "has-space",
		"..":            "worktree",
	} {
		if got := Slug(in); got != want {
			t.Errorf("Slug(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCreateReuseRemove(t *testing.T) {
	repo := gittest.New(t)
	if err := os.MkdirAll(filepath.Join(repo.Dir, "node_modules", "left-pad"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := &Manager{Root: repo.Dir}
	ctx := t.Context()

	wt, err := m.Create(ctx, "feature/x")
	if err != nil {
		t.Fatal(err)
	}
	want := &Worktree{Slug: "feature+x", Path: filepath.Join(repo.Dir, ".keel", "worktrees", "feature+x"),
		Branch: "keel/feature+x", Base: repo.Head()}
	if diff := cmp.Diff(want, wt); diff != "" {
		t.Fatalf("mismatch (-want +got):\n%s", diff)
	}
	if got := gittest.Run(t, wt.Path, "rev-parse", "--abbrev-ref", "HEAD"); got != "keel/feature+x" {
		t.Errorf("branch = %q", got)
	}
	if target, err := os.Readlink(filepath.Join(wt.Path, "node_modules")); err != nil || target != filepath.Join(repo.Dir, "node_modules") {
		t.Errorf("node_modules link = %q, %v", target, err)
	}

	// Reuse reads HEAD from files; a second Create neither fails nor relinks.
	again, err := m.Create(ctx, "feature/x")
	if err != nil {
		t.Fatal(err)
	}
	if !again.Reused || again.Base != wt.Base || again.Path != wt.Path {
		t.Errorf("reuse = %+v", again)
	}

	// The symlinked directory is not a change.
	if changed, err := m.Changed(ctx, wt); err != nil || changed {
		t.Errorf("Changed on a fresh worktree = %v, %v", changed, err)
	}
	kept, err := m.Finish(ctx, wt)
	if err != nil || kept {
		t.Fatalf("Finish = %v, %v; want removed", kept, err)
	}
	if _, err := os.Stat(wt.Path); !os.IsNotExist(err) {
		t.Errorf("worktree still there: %v", err)
	}
	if out := repo.Git("branch", "--list", "keel/*"); out != "" {
		t.Errorf("branch left behind: %q", out)
	}
}

func TestChangedWorktreeIsKept(t *testing.T) {
	for name, change := range map[string]func(t *testing.T, dir string){
		"uncommitted": func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "new.txt"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"committed": func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("changed"), 0o644); err != nil {
				t.Fatal(err)
			}
			gittest.Run(t, dir, "commit", "-q", "-am", "change")
		},
	} {
		t.Run(name, func(t *testing.T) {
			repo := gittest.New(t)
			m := &Manager{Root: repo.Dir}
			wt, err := m.Create(t.Context(), "agent-1")
			if err != nil {
				t.Fatal(err)
			}
			change(t, wt.Path)
			kept, err := m.Finish(t.Context(), wt)
			if err != nil || !kept {
				t.Fatalf("Finish = %v, %v; want kept", kept, err)
			}
			if _, err := os.Stat(wt.Path); err != nil {
				t.Errorf("kept worktree is gone: %v", err)
			}
		})
	}
}

func TestReadHeadPackedRefs(t *testing.T) {
	repo := gittest.New(t)
	m := &Manager{Root: repo.Dir}
	wt, err := m.Create(t.Context(), "packed")
	if err != nil {
		t.Fatal(err)
	}
	repo.Git("pack-refs", "--all")
	got, err := ReadHead(wt.Path)
	if err != nil || got != repo.Head() {
		t.Errorf("ReadHead after pack-refs = %q, %v; want %q", got, err, repo.Head())
	}
}

func TestHooksReplaceStrategy(t *testing.T) {
	dir := t.TempDir()
	made := filepath.Join(dir, "made")
	removed := filepath.Join(dir, "removed")
	group := func(ev, cmd string) settings.HookGroup {
		return settings.HookGroup{Event: ev, Hooks: []settings.HookCommand{{Type: "command", Command: cmd}}}
	}
	r, problems := hooks.New(hooks.Config{Trusted: true, ProjectDir: dir, Environ: []string{"PATH=" + os.Getenv("PATH")},
		Hooks: []settings.HookGroup{
			group("WorktreeCreate", "mkdir -p "+made+" && echo "+made),
			group("WorktreeRemove", "cat > "+removed),
		}})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	m := &Manager{Root: dir, Hooks: HookStrategy{Runner: r}}
	wt, err := m.Create(t.Context(), "x")
	if err != nil {
		t.Fatal(err)
	}
	if wt.Path != made || !wt.Hooked {
		t.Fatalf("hooked worktree = %+v", wt)
	}
	if err := m.Remove(t.Context(), wt); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(removed)
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(true, len(b) > 0 && contains(string(b), made)) {
		t.Errorf("WorktreeRemove input = %s", b)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestConcurrentCreateAndRemove: agents started in one batch create and remove their worktrees
// at the same time. git cannot: a `worktree add` reads every other worktree's admin files and
// fails on one another add has only begun writing ("failed to read .git/worktrees/…/commondir").
func TestConcurrentCreateAndRemove(t *testing.T) {
	repo := gittest.New(t)
	m := &Manager{Root: repo.Dir}
	const n = 8
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			wt, err := m.Create(t.Context(), fmt.Sprintf("agent-%d", i))
			if err == nil {
				_, err = m.Finish(t.Context(), wt)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(repo.Dir, Dir)); len(entries) != 0 {
		t.Errorf("%d worktrees left, want none (all were unchanged)", len(entries))
	}
}

// TestUntrustedCreateRunsNoRepositoryCode: an Agent call with isolation worktree asks nothing,
// so creating its worktree in an untrusted workspace must run none of the repository's
// programs — its post-checkout hook, a smudge filter on checkout. Trusted, both run (the
// positive control: a trusted repository's hooks still work).
func TestUntrustedCreateRunsNoRepositoryCode(t *testing.T) {
	repo := gittest.New(t)
	log := filepath.Join(t.TempDir(), "ran")
	prog := filepath.Join(t.TempDir(), "marker")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho \"$*\" >> "+log+"\ncat\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	repo.Write(".gitattributes", "*.txt filter=evil\n")
	repo.Write("a.txt", "a\n")
	repo.Commit("filtered file")
	repo.Git("config", "filter.evil.smudge", prog+" smudge")
	hook := filepath.Join(repo.Dir, ".git", "hooks", "post-checkout")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\n"+prog+" post-checkout </dev/null\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	untrusted := &Manager{Root: repo.Dir}
	wt, err := untrusted.Create(t.Context(), "untrusted")
	if err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(wt.Path, "a.txt")); err != nil || string(data) != "a\n" {
		t.Errorf("a.txt in the worktree = %q, %v", data, err)
	}
	if data, _ := os.ReadFile(log); len(data) > 0 {
		t.Errorf("creating a worktree in an untrusted workspace ran the repository's programs:\n%s", data)
	}
	trusted := &Manager{Root: repo.Dir, Trusted: true}
	if _, err := trusted.Create(t.Context(), "trusted"); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(log)
	for _, want := range []string{"post-checkout", "smudge"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("trusted worktree creation did not run %s; ran:\n%s", want, data)
		}
	}
}
