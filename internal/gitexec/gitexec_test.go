package gitexec

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/gittest"
)

// marker writes a program that appends its arguments to a log and passes stdin through (so a
// filter it stands in for still yields the content), and returns its path and the log.
func marker(t *testing.T) (prog, log string) {
	t.Helper()
	dir := t.TempDir()
	prog, log = filepath.Join(dir, "marker"), filepath.Join(dir, "ran.log")
	script := "#!/bin/sh\necho \"$0 $*\" >> " + log + "\ncat\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return prog, log
}

func ran(t *testing.T, log string) string {
	t.Helper()
	data, err := os.ReadFile(log)
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// hostile is a repository whose configuration and hooks run prog at every chance: fsmonitor,
// hooks (post-checkout, reference-transaction), a filter with clean, smudge and process
// commands on every .txt file, an external diff, a diff driver's textconv, a merge driver,
// a credential helper and a pager.
func hostile(t *testing.T, prog string) *gittest.Repo {
	t.Helper()
	repo := gittest.New(t)
	repo.Write(".gitattributes", "*.txt filter=evil diff=evil merge=evil\n")
	repo.Write("a.txt", "hello\n")
	repo.Commit("add a.txt")
	for key, value := range map[string]string{
		"core.fsmonitor": prog + " fsmonitor", "filter.evil.clean": prog + " clean",
		"filter.evil.smudge": prog + " smudge", "filter.evil.process": prog + " process",
		"filter.evil.required": "true", "diff.external": prog + " external",
		"diff.evil.textconv": prog + " textconv", "merge.evil.driver": prog + " merge",
		"credential.helper": prog + " credential", "core.pager": prog + " pager",
		"pager.status": prog + " pager",
	} {
		repo.Git("config", key, value)
	}
	for _, hook := range []string{"post-checkout", "reference-transaction", "pre-auto-gc"} {
		p := filepath.Join(repo.Dir, ".git", "hooks", hook)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+prog+" hook-"+hook+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return repo
}

// TestUntrustedRunsNothing runs the commands keel runs itself — status, worktree add and
// remove, branch -D — and a diff, in a hostile repository: none of its programs runs, and the
// commands still work.
func TestUntrustedRunsNothing(t *testing.T) {
	prog, log := marker(t)
	repo := hostile(t, prog)
	r := Runner{Env: gittest.Env()}
	ctx := t.Context()
	repo.Write("a.txt", "hello\nchanged\n")
	out, err := r.Output(ctx, repo.Dir, "status", "--short")
	if err != nil || !strings.Contains(string(out), "M a.txt") {
		t.Fatalf("status = %q, %v", out, err)
	}
	diff, err := r.Output(ctx, repo.Dir, "diff")
	if err != nil || !strings.Contains(string(diff), "+changed") {
		t.Errorf("diff = %q, %v; want the change as a plain diff", diff, err)
	}
	wt := filepath.Join(t.TempDir(), "wt")
	if _, err := r.Output(ctx, repo.Dir, "worktree", "add", "-q", "-B", "keel/x", wt, "HEAD"); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(wt, "a.txt")); err != nil || string(data) != "hello\n" {
		t.Errorf("worktree a.txt = %q, %v", data, err)
	}
	if _, err := r.Output(ctx, repo.Dir, "worktree", "remove", "--force", wt); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Output(ctx, repo.Dir, "branch", "-q", "-D", "keel/x"); err != nil {
		t.Fatal(err)
	}
	if got := ran(t, log); got != "" {
		t.Errorf("the repository's programs ran:\n%s", got)
	}
}

// TestTrustedRunsRepositoryConfig is the positive control: in a trusted workspace the same
// commands run the repository's hooks and filters, as the user's own git would.
func TestTrustedRunsRepositoryConfig(t *testing.T) {
	prog, log := marker(t)
	repo := hostile(t, prog)
	repo.Git("config", "--unset", "filter.evil.process") // the marker is no process filter
	r := Runner{Trusted: true, Env: gittest.Env()}
	wt := filepath.Join(t.TempDir(), "wt")
	if _, err := r.Output(t.Context(), repo.Dir, "worktree", "add", "-q", "-B", "keel/x", wt, "HEAD"); err != nil {
		t.Fatal(err)
	}
	got := ran(t, log)
	for _, want := range []string{"hook-post-checkout", "smudge"} {
		if !strings.Contains(got, want) {
			t.Errorf("trusted worktree add did not run %s; ran:\n%s", want, got)
		}
	}
}

// TestBareRepositoryNotDiscovered: a bare repository planted in a subdirectory (HEAD, config,
// objects, refs written as plain files) is not found by walking up, so its fsmonitor never
// runs; the directory reads as no repository at all.
func TestBareRepositoryNotDiscovered(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	prog, log := marker(t)
	dir := t.TempDir()
	for name, content := range map[string]string{
		"HEAD":   "ref: refs/heads/main\n",
		"config": "[core]\n\tbare = false\n\tworktree = " + dir + "\n\tfsmonitor = " + prog + " fsmonitor\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"objects", "refs/heads"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := (Runner{Env: gittest.Env()}).Output(t.Context(), dir, "status", "--short"); err == nil {
		t.Errorf("status in a planted bare repository worked: %q", out)
	}
	if got := ran(t, log); got != "" {
		t.Errorf("the planted repository's fsmonitor ran: %s", got)
	}
}

// TestSubmoduleNotEntered: a submodule's own configuration is another repository's, which the
// superproject's listing does not name; status leaves submodules alone.
func TestSubmoduleNotEntered(t *testing.T) {
	prog, log := marker(t)
	sub := gittest.New(t)
	sub.Write(".gitattributes", "*.txt filter=sub\n")
	sub.Write("b.txt", "b\n")
	sub.Commit("b")
	super := gittest.New(t)
	super.Git("-c", "protocol.file.allow=always", "submodule", "add", "-q", sub.Dir, "s")
	super.Commit("submodule")
	subDir := filepath.Join(super.Dir, "s")
	gittest.Run(t, subDir, "config", "filter.sub.clean", prog+" subclean")
	// A changed time with the same content makes status run the clean filter to compare.
	now := mustStat(t, filepath.Join(subDir, "b.txt")).ModTime().Add(3e9)
	if err := os.Chtimes(filepath.Join(subDir, "b.txt"), now, now); err != nil {
		t.Fatal(err)
	}
	if _, err := (Runner{Env: gittest.Env()}).Output(t.Context(), super.Dir, "status", "--short"); err != nil {
		t.Fatal(err)
	}
	if got := ran(t, log); got != "" {
		t.Errorf("the submodule's filter ran: %s", got)
	}
}

func mustStat(t *testing.T, p string) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

// TestCaseVariantDriver: a harmless driver named like the armed one but for case
// ([filter "Lfs"] before [filter "lfs"]) does not let the armed one run.
func TestCaseVariantDriver(t *testing.T) {
	prog, log := marker(t)
	repo := gittest.New(t)
	repo.Write(".gitattributes", "*.txt filter=lfs\n")
	repo.Write("a.txt", "a\n")
	repo.Commit("a")
	repo.Git("config", "filter.Lfs.clean", "cat")
	repo.Git("config", "filter.lfs.clean", prog+" clean")
	// A changed time with the same content makes status run the clean filter to compare.
	now := mustStat(t, filepath.Join(repo.Dir, "a.txt")).ModTime().Add(3e9)
	if err := os.Chtimes(filepath.Join(repo.Dir, "a.txt"), now, now); err != nil {
		t.Fatal(err)
	}
	if _, err := (Runner{Env: gittest.Env()}).Output(t.Context(), repo.Dir, "status", "--short"); err != nil {
		t.Fatal(err)
	}
	if got := ran(t, log); got != "" {
		t.Errorf("the repository's filter ran: %s", got)
	}
}

// TestUnneutralisableDriver: a driver whose name holds "=" cannot be switched off with -c, so
// git is not run at all.
func TestUnneutralisableDriver(t *testing.T) {
	prog, log := marker(t)
	repo := gittest.New(t)
	repo.Git("config", "filter.a=b.smudge", prog+" smudge")
	if _, err := (Runner{Env: gittest.Env()}).Output(t.Context(), repo.Dir, "status"); !errors.Is(err, ErrUnneutralisable) {
		t.Errorf("err = %v; want ErrUnneutralisable", err)
	}
	if got := ran(t, log); got != "" {
		t.Errorf("ran: %s", got)
	}
}

// TestNeutraliseKeys: each program-naming key is switched off, a driver differing from
// another only in case too (git's subsections are case-sensitive); the others are left alone.
func TestNeutraliseKeys(t *testing.T) {
	opts, err := Neutralise([]string{"user.name", "filter.Lfs.smudge", "filter.lfs.smudge", "gpg.ssh.program", "diff.x.textconv"})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(opts[len(fixed()):], " ")
	if want := "-c filter.Lfs.smudge= -c filter.lfs.smudge= -c gpg.ssh.program=ssh-keygen -c diff.x.textconv=cat"; got != want {
		t.Errorf("per-key options = %q; want %q", got, want)
	}
}
