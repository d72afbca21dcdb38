//go:build unix

package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestGitConfigRoundTrip: the configuration keel writes back reads, through git, as the
// settings it kept — values and subsections with quotes, backslashes, tabs and newlines, and
// bare booleans.
func TestGitConfigRoundTrip(t *testing.T) {
	want := []configEntry{
		{key: "core.bare", value: "false"},
		{key: "core.sparsecheckout", noValue: true},
		{key: "remote.o \"q\" \\b.url", value: "https://h/x"},
		{key: "user.name", value: "a \"quoted\" \\ name\twith\nlines  "},
		{key: "branch.Main.merge", value: "refs/heads/Main"},
	}
	cfg := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(cfg, formatGitConfig(want), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readGitConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("read back %+v, want %+v\nfile:\n%s", got, want, formatGitConfig(want))
	}
}

// TestSafeGitKey: what git init, clone and remote write stays; what names a program, another
// file or the ext:: transport goes, known or not.
func TestSafeGitKey(t *testing.T) {
	for _, kv := range [][2]string{{"core.bare", "false"}, {"remote.origin.url", "https://h/x"}, {"remote.a.b.fetch", "+refs/*:refs/*"},
		{"branch.main.merge", "refs/heads/main"}, {"user.email", "x@y"}, {"submodule.s.url", "../s"}} {
		if !safeGitKey(kv[0], kv[1]) {
			t.Errorf("%s = %s is refused", kv[0], kv[1])
		}
	}
	for _, kv := range [][2]string{{"core.fsmonitor", "x"}, {"core.hookspath", "h"}, {"core.sshcommand", "x"}, {"core.pager", "x"},
		{"include.path", "x"}, {"includeif.gitdir:/.path", "x"}, {"filter.f.smudge", "x"}, {"diff.d.textconv", "x"},
		{"remote.o.uploadpack", "x"}, {"remote.o.url", " EXT::sh -c x"}, {"submodule.s.update", "!x"}, {"core.newthing", "x"},
		{"alias.st", "!x"}, {"credential.helper", "x"}, {"core.worktree", "/home/u"}} {
		if safeGitKey(kv[0], kv[1]) {
			t.Errorf("%s = %s is kept", kv[0], kv[1])
		}
	}
}

// TestTemplateHooksStay: a hook git init copied from the user's template directory stays; one
// that differs from the template goes aside.
func TestTemplateHooksStay(t *testing.T) {
	tmpl := t.TempDir()
	t.Setenv("GIT_TEMPLATE_DIR", tmpl)
	hooks := filepath.Join(t.TempDir(), "hooks")
	for path, body := range map[string]string{
		filepath.Join(tmpl, "hooks", "pre-commit"): "#!/bin/sh\nlint\n",
		filepath.Join(tmpl, "hooks", "pre-push"):   "#!/bin/sh\ntest\n",
		filepath.Join(hooks, "pre-commit"):         "#!/bin/sh\nlint\n",
		filepath.Join(hooks, "pre-push"):           "#!/bin/sh\nplanted\n",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	msg, _ := disarmHooks(hooks, []string{filepath.Dir(hooks)})
	if !strings.Contains(msg, "the hooks pre-push in") {
		t.Errorf("disarmHooks said %q", msg)
	}
	if _, err := os.Stat(filepath.Join(hooks, "pre-commit")); err != nil {
		t.Errorf("the template's hook was moved: %v", err)
	}
	if _, err := os.Stat(filepath.Join(hooks+refusedSuffix, "pre-push")); err != nil {
		t.Errorf("the planted hook is not aside: %v", err)
	}
}

// TestDisarmConfigThatGitCannotRead: a configuration that is a FIFO (git would wait on it),
// too large, a symbolic link (what it names may change later) or not git's syntax is moved
// aside whole, without waiting, and an empty one
// put in its place.
func TestDisarmConfigThatGitCannotRead(t *testing.T) {
	for name, tc := range map[string]struct {
		make func(path string) error
		why  string
	}{
		"fifo": {func(p string) error { return syscall.Mkfifo(p, 0o644) }, "that is not a regular file"},
		"too large": {func(p string) error {
			return os.WriteFile(p, []byte("[core]\n\tbare = false\n"+strings.Repeat("#\n", maxGitConfig)), 0o644)
		}, "that is larger than"},
		"link": {func(p string) error {
			return os.Symlink("/dev/null", p)
		}, "that is a symbolic link"},
		"hard link": {func(p string) error {
			if err := os.WriteFile(p+"-other", []byte("[core]\n\tbare = false\n"), 0o644); err != nil {
				return err
			}
			return os.Link(p+"-other", p)
		}, "that has another name (a hard link)"},
		"garbage": {func(p string) error { return os.WriteFile(p, []byte("[core\n\tfsmonitor = x\n"), 0o644) }, "that git cannot read (git"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "config")
			if err := tc.make(cfg); err != nil {
				t.Fatal(err)
			}
			msg, _ := disarmConfig(cfg, filepath.Dir(cfg), []string{filepath.Dir(cfg)}, func(string) bool { return false })
			if !strings.Contains(msg, tc.why) || !strings.Contains(msg, "moved the file as written to "+cfg+refusedSuffix) {
				t.Errorf("disarmConfig said %q", msg)
			}
			if b, err := os.ReadFile(cfg); err != nil || len(b) != 0 {
				t.Errorf("the configuration in its place holds %q (%v), want it empty", b, err)
			}
		})
	}
}

// TestWatchKnowsDirectoriesNotPaths: a gitdir protected when a command started is taken for
// protected at its end only while its path leads to the same directory — not once the
// directory was renamed away and another made in its place (as in a writable cache, where no
// mount pins its parent).
func TestWatchKnowsDirectoriesNotPaths(t *testing.T) {
	d := filepath.Join(t.TempDir(), "g")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	w := plantWatch{known: map[string]string{d: dirIdentity(d)}}
	if !w.protects(d) {
		t.Fatal("the directory protected at the start is not taken for protected")
	}
	if err := os.Rename(d, d+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if w.protects(d) {
		t.Error("another directory at the protected path is taken for protected")
	}
}

// TestOwnWorktreeResolvesLinks: a core.worktree is kept only when the directory git would use
// — a link before a ".." followed, as the kernel does — has a .git naming the gitdir back, and
// the way there is settled: not through /proc, nor through a link a command could retarget.
func TestOwnWorktreeResolvesLinks(t *testing.T) {
	base := t.TempDir()
	g, wt, victim := filepath.Join(base, "g"), filepath.Join(base, "wt"), filepath.Join(base, "victim", "child")
	for _, d := range []string{g, wt, victim} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for path, body := range map[string]string{filepath.Join(wt, ".git"): "gitdir: " + g + "\n", filepath.Join(g, ".git"): "gitdir: .\n"} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(victim, filepath.Join(g, "lnk")); err != nil {
		t.Fatal(err)
	}
	if !ownWorktree(configEntry{key: "core.worktree", value: wt}, g, nil) {
		t.Error("a core.worktree naming the worktree whose .git names the gitdir is refused")
	}
	if ownWorktree(configEntry{key: "core.worktree", value: "lnk/.."}, g, nil) {
		t.Error("lnk/.., which git takes for the victim's directory, is kept")
	}
	// git resolves /proc/self/cwd from its own working directory, wherever that is.
	t.Chdir(base)
	if ownWorktree(configEntry{key: "core.worktree", value: "/proc/self/cwd/wt"}, g, nil) {
		t.Error("a core.worktree through /proc/self/cwd is kept")
	}
	// A link in the writable roots could be pointed elsewhere after keel looked.
	if err := os.Symlink(wt, filepath.Join(base, "wtlink")); err != nil {
		t.Fatal(err)
	}
	if ownWorktree(configEntry{key: "core.worktree", value: filepath.Join(base, "wtlink")}, g, []string{base}) {
		t.Error("a core.worktree through a link in the writable roots is kept")
	}
}
