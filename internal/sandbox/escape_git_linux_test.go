package sandbox_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/gitexec"
	"github.com/keel-dev/keel/internal/gittest"
	"github.com/keel-dev/keel/internal/sandbox"
	"github.com/keel-dev/keel/internal/settings"
)

// gitPrelude defines, for the attack scripts, evilcfg (a git configuration whose fsmonitor
// touches $MARK), evilhook (a hook that does) and mkgitdir DIR (a directory git accepts as a
// repository, with that configuration).
const gitPrelude = `evilcfg() { printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = touch %s\n' "$MARK"; }
mkgitdir() { mkdir -p "$1/objects" "$1/refs/heads" && echo 'ref: refs/heads/main' > "$1/HEAD" && evilcfg > "$1/config"; }
evilhook() { printf '#!/bin/sh\ntouch %s\n' "$MARK"; }
`

// gitAttack is one attempt to leave, inside the writable root, what makes git run a program
// later, outside the sandbox: layout builds the directories under base and returns the
// workspace (the writable root) and the directory git is then run in outside.
type gitAttack struct {
	layout func(t *testing.T, base string) (ws, gitIn string)
	script string
	// home makes the workspace the user's home directory too.
	home bool
	// disarmed says no mount can stop the script — it makes a repository, and so its
	// configuration, where none stood — so it succeeds inside; keel disarms what it made as
	// the command is released.
	disarmed bool
	// earlier runs in the sandbox first, as a command of its own.
	earlier string
	// outside is what git then does outside (status when empty).
	outside []string
}

// newRepo makes a repository at dir with one commit.
func newRepo(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "init", "-q", "-b", "main")
	write(t, filepath.Join(dir, "README"), "readme\n")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "initial")
}

// repoLayout is a workspace that is a repository with a submodule (sm, its gitdir in
// .git/modules/sm) and a nested repository (nested), and a linked worktree outside it
// (base/wt) whose admin directory is in the workspace's .git/worktrees.
func repoLayout(t *testing.T, base string) string {
	t.Helper()
	ws := filepath.Join(base, "ws")
	newRepo(t, filepath.Join(base, "subsrc"))
	newRepo(t, ws)
	git(t, ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q", "../subsrc", "sm")
	git(t, ws, "commit", "-q", "-m", "submodule")
	newRepo(t, filepath.Join(ws, "nested"))
	git(t, ws, "worktree", "add", "-q", filepath.Join(base, "wt"))
	return ws
}

// linkedWorktree is a workspace that is a linked worktree (.git a file) of a repository
// outside it.
func linkedWorktree(t *testing.T, base string) (string, string) {
	main := filepath.Join(base, "main")
	newRepo(t, main)
	ws := filepath.Join(base, "ws")
	git(t, main, "worktree", "add", "-q", ws)
	return ws, ws
}

// gitOutside runs git status (or args) in dir outside the sandbox, as the user would later: with the
// user's configuration in home (no system configuration), never looking above base.
func gitOutside(t *testing.T, dir, home, base string, args ...string) string {
	t.Helper()
	if len(args) == 0 {
		args = []string{"status", "--short"}
	}
	// Trusted: the point is what git outside does with the repository's configuration.
	cmd, err := gitexec.Runner{Trusted: true}.Command(t.Context(), dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") && !strings.HasPrefix(kv, "HOME=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CEILING_DIRECTORIES="+filepath.Dir(base))
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// gitWorld is a sandbox whose one writable root is ws, with the test's usual policy; with
// home, ws is the user's home directory too.
func gitWorld(t *testing.T, ws string, home bool) *world {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", "")
	in := sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{ws}}
	if home {
		in.Home = ws
	}
	w := &world{ws: ws, s: sandbox.New(sandbox.NewPolicy(in), sandbox.Options{})}
	skipWithoutSandbox(t, w.s)
	return w
}

// TestEscapeGit: nothing written inside the sandbox makes git run a program later, outside
// it — not a commondir, a submodule's or a nested repository's configuration, a linked
// worktree's .git file, a repository made where the workspace has none, nor git's global
// configuration in a home directory that is a writable root. Each attack runs in its own
// layout; git is then run outside where the planted configuration would take effect.
func TestEscapeGit(t *testing.T) { forEachLauncher(t, testEscapeGit) }

func testEscapeGit(t *testing.T) {
	for name, a := range gitAttacks {
		t.Run(name, func(t *testing.T) {
			base := sandbox.VisibleDir(t)
			ws, gitIn := a.layout(t, base)
			w := gitWorld(t, ws, a.home)
			mark := filepath.Join(t.TempDir(), "PWNED")
			if a.earlier != "" {
				if out := w.run(t, gitPrelude+a.earlier+" && echo DONE", "MARK="+mark); !strings.Contains(out, "DONE") {
					t.Fatalf("the earlier command failed:\n%s", out)
				}
			}
			out := w.run(t, gitPrelude+a.script+" && echo ESCAPED", "MARK="+mark)
			if escaped := strings.Contains(out, "ESCAPED"); escaped != a.disarmed {
				t.Errorf("%q inside the sandbox: succeeded %v, want %v:\n%s", a.script, escaped, a.disarmed, out)
			}
			home := t.TempDir()
			if a.home {
				home = ws
			}
			status := gitOutside(t, gitIn, home, base, a.outside...)
			if _, err := os.Lstat(mark); err == nil {
				t.Errorf("git %v outside ran what %q planted:\n%s\n%s", a.outside, a.script, out, status)
			}
		})
	}
}

// TestEscapeHomeStartup: with the home directory a writable root, the start-up files of the
// shells, the login and the tools git starts stay read-only, also when they (and their
// directories) do not exist.
func TestEscapeHomeStartup(t *testing.T) { forEachLauncher(t, testEscapeHomeStartup) }

func testEscapeHomeStartup(t *testing.T) {
	ws := filepath.Join(sandbox.VisibleDir(t), "home")
	write(t, filepath.Join(ws, ".local", "share", "x"), "x\n")
	w := gitWorld(t, ws, true)
	for _, f := range []string{".bash_aliases", ".zlogout", ".local/bin/git", ".config/fish/config.fish",
		".config/systemd/user/x.service", ".config/autostart/x.desktop", ".config/environment.d/x.conf",
		".npmrc", ".vimrc", ".config/nvim/init.vim", ".cargo/env", ".cargo/bin/git", ".config/git/attributes"} {
		t.Run(f, func(t *testing.T) {
			script := fmt.Sprintf("mkdir -p %s && echo pwned > %s && echo ESCAPED", filepath.Dir(f), f)
			if out := w.run(t, script); strings.Contains(out, "ESCAPED") {
				t.Errorf("%s was written inside the sandbox:\n%s", f, out)
			}
		})
	}
	if out := w.run(t, "mkdir -p .config/other && echo ok > .config/other/f && cat .config/other/f"); !strings.Contains(out, "ok") {
		t.Errorf("a configuration directory not on the list is not writable:\n%s", out)
	}
}

// TestGitInside: what git does inside keeps working with its configuration pinned — add and
// commit in a repository with a submodule, a nested repository and a linked worktree; git
// status in a workspace that is no repository (not one, as outside) and in a subdirectory of
// one (its parent's) — and the placeholders are gone afterwards.
func TestGitInside(t *testing.T) { forEachLauncher(t, testGitInside) }

func testGitInside(t *testing.T) {
	base := sandbox.VisibleDir(t)
	ws := repoLayout(t, base)
	w := gitWorld(t, ws, false)
	out := w.run(t, "echo b > b && git add b && git -c user.name=x -c user.email=x@x commit -q -m b && git status --short && echo COMMITTED")
	if !strings.Contains(out, "COMMITTED") {
		t.Fatalf("a commit inside failed:\n%s", out)
	}
	if log := gittestLog(t, ws); !strings.HasPrefix(log, "b\n") {
		t.Errorf("the commit made inside is not in the repository: %q", log)
	}
	for _, p := range []string{".git/commondir", ".git/config.worktree", ".git/modules/sm/commondir", ".git/modules/sm/config.worktree", "nested/.git/commondir"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
			t.Errorf("the placeholder %s stays after the command", p)
		}
	}

	plain := filepath.Join(t.TempDir(), "plain")
	write(t, filepath.Join(plain, "f"), "f\n")
	w = gitWorld(t, plain, false)
	if out := w.run(t, "git status; ls -d .git"); !strings.Contains(out, "not a git repository") || !strings.Contains(out, ".git") {
		t.Errorf("git status in a workspace that is no repository:\n%s", out)
	}
	if _, err := os.Lstat(filepath.Join(plain, ".git")); err == nil {
		t.Error("the .git placeholder stays after the command")
	}

	newRepo(t, filepath.Join(base, "repo"))
	sub := filepath.Join(base, "repo", "pkg")
	write(t, filepath.Join(sub, "f"), "f\n")
	w = gitWorld(t, sub, false)
	if out := w.run(t, "git status --short . && echo STATUS"); !strings.Contains(out, "STATUS") || strings.Contains(out, "fatal") {
		t.Errorf("git status in a subdirectory workspace of a repository:\n%s", out)
	}
	if _, err := os.Lstat(filepath.Join(sub, ".git")); err == nil {
		t.Error("the .git placeholder stays after the command")
	}
}

// gittestLog is the subjects of dir's commits, newest first.
func gittestLog(t *testing.T, dir string) string {
	t.Helper()
	return gittest.Run(t, dir, "log", "--format=%s") + "\n"
}

// TestSymlinkedPaths: a working directory reached through a symbolic link, and a denyRead
// path through a symbolically linked directory, work: the command runs, writes land in the
// real directory, the masked file reads empty.
func TestSymlinkedPaths(t *testing.T) { forEachLauncher(t, testSymlinkedPaths) }

func testSymlinkedPaths(t *testing.T) {
	base := sandbox.VisibleDir(t)
	ws, out := filepath.Join(base, "ws"), filepath.Join(base, "out")
	write(t, filepath.Join(ws, "f"), "f\n")
	write(t, filepath.Join(out, "denied.txt"), "TOPSECRET-linked\n")
	for link, target := range map[string]string{"wslink": ws, "outlink": out} {
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			t.Fatal(err)
		}
	}
	sb := &settings.Sandbox{}
	sb.Filesystem.DenyRead = vals(filepath.Join(base, "outlink", "denied.txt"))
	in := sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Settings: sb, Dirs: []string{filepath.Join(base, "wslink")}}
	w := &world{ws: filepath.Join(base, "wslink"), s: sandbox.New(sandbox.NewPolicy(in), sandbox.Options{})}
	skipWithoutSandbox(t, w.s)
	got := w.run(t, fmt.Sprintf("echo landed > new && cat new; cat %s/outlink/denied.txt %s/denied.txt", base, out))
	if !strings.Contains(got, "landed") || strings.Contains(got, "TOPSECRET") {
		t.Errorf("through the links, the command did not run, or read the masked file:\n%s", got)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "new")); string(b) != "landed\n" {
		t.Errorf("the write through the linked working directory did not land: %q", b)
	}
}

// TestEscapeReadsManyMatches: a Read deny glob with more matches than keel masks one by one
// masks the directory holding them, so no match stays readable.
func TestEscapeReadsManyMatches(t *testing.T) { forEachLauncher(t, testEscapeReadsManyMatches) }

func testEscapeReadsManyMatches(t *testing.T) {
	ws := t.TempDir()
	for i := range 300 {
		write(t, filepath.Join(ws, "keys", fmt.Sprintf("k%03d.key", i)), fmt.Sprintf("KEYSECRET%03d\n", i))
	}
	in := sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{ws}, ReadDeny: []sandbox.PathRule{{Spec: "./keys/*.key"}}}
	w := &world{ws: ws, s: sandbox.New(sandbox.NewPolicy(in), sandbox.Options{})}
	skipWithoutSandbox(t, w.s)
	if out := w.run(t, "cat keys/*.key; cat keys/k299.key; echo DONE"); strings.Contains(out, "KEYSECRET") || !strings.Contains(out, "DONE") {
		t.Errorf("a match of the Read deny glob was readable:\n%s", out)
	}
}

// TestPlantedSubmoduleIsDisarmed: a repository made inside with a configuration that names a
// program and added to the workspace's index as a submodule — which no mount can prevent, and
// whose configuration git run outside would read — is disarmed and named when the run is
// released; adding files, a repository the sandbox protected from the start (a submodule's, a
// nested one's) or a planted submodule whose configuration starts nothing is not reported.
func TestPlantedSubmoduleIsDisarmed(t *testing.T) { forEachLauncher(t, testPlantedSubmoduleIsDisarmed) }

func testPlantedSubmoduleIsDisarmed(t *testing.T) {
	base := sandbox.VisibleDir(t)
	ws := repoLayout(t, base)
	w := gitWorld(t, ws, false)
	commit := " && git -C %[1]s -c user.name=x -c user.email=x@x commit -q --allow-empty -m p && git add %[1]s 2>/dev/null"
	for _, tc := range []struct {
		name, script string
		want         string
	}{
		{"files", "echo f > f && git add f", ""},
		{"protected repositories", "echo g > nested/g && git add -A", ""},
		{"planted, configuration safe", "git init -q clean" + fmt.Sprintf(commit, "clean"), ""},
		{"planted", "git init -q planted && git -C planted config core.fsmonitor 'touch pwned'" + fmt.Sprintf(commit, "planted"),
			"the command wrote " + filepath.Join(ws, "planted", ".git", "config") + ", a git configuration that sets core.fsmonitor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, planted := w.say(t, tc.script+" && echo DONE")
			if !strings.Contains(out, "DONE") {
				t.Fatalf("the script failed inside:\n%s", out)
			}
			if tc.want == "" && planted != "" {
				t.Errorf("reported: %s", planted)
			}
			if tc.want != "" && !strings.Contains(planted, tc.want) {
				t.Errorf("Planted() = %q, want it to say %q", planted, tc.want)
			}
		})
	}
}
