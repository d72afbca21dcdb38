package sandbox_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
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

// gitAttacks are the ways the adversarial test found (F1, F3, F4, F5, F6) and their
// variants.
var gitAttacks = map[string]gitAttack{
	"commondir": {script: "mkgitdir evilc && cp -r .git/objects/. evilc/objects/ && cp -r .git/refs/. evilc/refs/ && echo ../evilc > .git/commondir",
		layout: func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	"worktree admin commondir": {script: "mkgitdir evilc && echo \"$PWD/evilc\" > .git/worktrees/wt/commondir",
		layout: func(t *testing.T, base string) (string, string) {
			return repoLayout(t, base), filepath.Join(base, "wt")
		}},
	"submodule config": {script: "evilcfg >> .git/modules/sm/config",
		layout: func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	"submodule gitdir swapped": {script: "{ mv .git/modules .git/modules.old || mv .git/modules/sm .git/modules/sm.old; } && mkgitdir .git/modules/sm",
		layout: func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	"nested config": {script: "evilcfg >> nested/.git/config",
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "nested")
		}},
	"nested swapped": {script: "{ mv nested nested.old || mv nested/.git nested/.git.old; } && mkgitdir nested/.git",
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "nested")
		}},
	"linked worktree .git file": {script: "mkgitdir evil && echo 'gitdir: evil' > .git",
		layout: linkedWorktree},
	"linked worktree .git replaced": {script: "mkgitdir evil && { rm -f .git || mv .git .git.old; } && echo 'gitdir: evil' > .git",
		layout: linkedWorktree},
	"not a repository": {script: "mkgitdir .git",
		layout: func(t *testing.T, base string) (string, string) {
			ws := filepath.Join(base, "plain")
			write(t, filepath.Join(ws, "f"), "f\n")
			return ws, ws
		}},
	"subdirectory of a repository": {script: "mkgitdir .git",
		layout: func(t *testing.T, base string) (string, string) {
			newRepo(t, filepath.Join(base, "repo"))
			ws := filepath.Join(base, "repo", "pkg")
			write(t, filepath.Join(ws, "f"), "f\n")
			return ws, ws
		}},
	"made repository": {disarmed: true, script: "git init -q made && evilcfg >> made/.git/config",
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "made")
		}},
	"made .git file to a repository out of the search": {disarmed: true,
		script: "mkgitdir node_modules/r && mkdir made && echo \"gitdir: $PWD/node_modules/r\" > made/.git",
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "made")
		}},
	"planted submodule out of the search": {disarmed: true,
		script: "git init -q node_modules/sm2 && evilcfg >> node_modules/sm2/.git/config && git -C node_modules/sm2 -c user.name=x -c user.email=x@x commit -q --allow-empty -m p && git add -f node_modules/sm2 2>/dev/null",
		layout: func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	// An independent adversarial run found these (A1–A28).
	"old configuration moved into a new gitdir": {disarmed: true, earlier: "mkdir stash && evilcfg > stash/config",
		script: "git init -q --bare /tmp/b && cp -r /tmp/b/HEAD /tmp/b/objects /tmp/b/refs stash/ && mkdir sub && mv stash sub/.git",
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "sub")
		}},
	"old hooks moved into a new gitdir": {disarmed: true, earlier: "mkdir -p stash/hooks && evilhook > stash/hooks/post-commit && chmod +x stash/hooks/post-commit",
		script:  "git init -q sub && rm -rf sub/.git/hooks && mv stash/hooks sub/.git/hooks",
		outside: []string{"-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "--allow-empty", "-m", "x"},
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "sub")
		}},
	".git file with a trailing space": {disarmed: true,
		script: "git init -q --bare '.git/evil ' && git -C '.git/evil ' config core.bare false && evilcfg >> '.git/evil /config' && mkdir sub && printf 'gitdir: ../.git/evil \\n' > sub/.git && (cd sub && git -c user.name=x -c user.email=x@x commit -q --allow-empty -m x) && git add sub",
		layout: func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	"commondir with a trailing space": {disarmed: true,
		script: "git init -q --bare '.git/evc ' && git -C '.git/evc ' config core.bare false && evilcfg >> '.git/evc /config' && mkdir -p .git/evc/objects .git/evc/refs wt sub && echo 'ref: refs/heads/main' > wt/HEAD && printf '../.git/evc \\n' > wt/commondir && echo \"$PWD/sub/.git\" > wt/gitdir && printf 'gitdir: ../wt\\n' > sub/.git",
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "sub")
		}},
	".git a link to a .git file": {disarmed: true, earlier: "git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),sub",
		script: "git init -q --bare .git/evil2 && git -C .git/evil2 config core.bare false && evilcfg >> .git/evil2/config && mkdir sub && printf 'gitdir: ../.git/evil2\\n' > gitfile.txt && ln -s ../gitfile.txt sub/.git",
		layout: func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	".git a link to a .git file, git run there": {disarmed: true,
		script: "git init -q --bare .git/evil3 && git -C .git/evil3 config core.bare false && evilcfg >> .git/evil3/config && mkdir sub && printf 'gitdir: ../.git/evil3\\n' > gitfile.txt && ln -s ../gitfile.txt sub/.git",
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "sub")
		}},
	// A second adversarial run (B1–B16).
	".git file padded past what keel read": {disarmed: true,
		script: "git init -q --bare node_modules/x/g && git -C node_modules/x/g config core.bare false && evilcfg >> node_modules/x/g/config && mkdir sub && { printf 'gitdir: ../node_modules/x/g'; head -c 70000 /dev/zero | tr '\\0' '\\n'; } > sub/.git && (cd sub && git -c user.name=x -c user.email=x@x commit -q --allow-empty -m x) && git add sub",
		layout: func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	"commondir padded past what keel read": {disarmed: true,
		script: "git init -q --bare node_modules/y/c && git -C node_modules/y/c config core.bare false && evilcfg >> node_modules/y/c/config && mkdir -p sub/.git && echo 'ref: refs/heads/main' > sub/.git/HEAD && { printf '../../node_modules/y/c'; head -c 70000 /dev/zero | tr '\\0' '\\n'; } > sub/.git/commondir",
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "sub")
		}},
	".git file with a NUL": {disarmed: true,
		script: "git init -q --bare node_modules/x/g && git -C node_modules/x/g config core.bare false && evilcfg >> node_modules/x/g/config && mkdir sub && printf 'gitdir: ../node_modules/x/g\\0junk\\n' > sub/.git && (cd sub && git -c user.name=x -c user.email=x@x commit -q --allow-empty -m x) && git add sub",
		layout: func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	".git file with .. after a link": {disarmed: true,
		script: "git init -q --bare node_modules/x/g && git -C node_modules/x/g config core.bare false && evilcfg >> node_modules/x/g/config && mkdir -p node_modules/x/d sub && ln -s ../node_modules/x/d sub/lnk && printf 'gitdir: lnk/../g\\n' > sub/.git && (cd sub && git -c user.name=x -c user.email=x@x commit -q --allow-empty -m x) && git add sub",
		layout: func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	"HEAD, objects and refs beside the project's files": {disarmed: true,
		script: "mkdir -p objects refs && echo 'ref: refs/heads/main' > HEAD && git init -q sub && evilcfg >> sub/.git/config",
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "sub")
		}},
	"index put back as it was": {disarmed: true,
		earlier: "b=$(echo hi | git hash-object -w --stdin) && git update-index --add --cacheinfo 100644,$b,node_modules/pkg",
		script:  "cp -p .git/index /tmp/ref && git update-index --cacheinfo 160000,$(git rev-parse HEAD),node_modules/pkg && touch -r /tmp/ref .git/index && git init -q node_modules/pkg && evilcfg >> node_modules/pkg/.git/config",
		layout:  func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	"a link in a protected gitdir's path replaced": {disarmed: true,
		earlier: "git init -q --bare real/g && git -C real/g config core.bare false && ln -s real lnk && mkdir sub && echo 'gitdir: ../lnk/g' > sub/.git && (cd sub && git -c user.name=x -c user.email=x@x commit -q --allow-empty -m x) && git add sub",
		script:  "rm lnk && mkdir -p node_modules/x && git init -q --bare node_modules/x/g && git -C node_modules/x/g config core.bare false && evilcfg >> node_modules/x/g/config && ln -s node_modules/x lnk",
		layout:  func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	"submodule entry in a submodule's index": {disarmed: true,
		script: "cd sm && git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),node_modules/p && git init -q node_modules/p && evilcfg >> node_modules/p/.git/config",
		layout: func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	"remotes/ in the protected .git": {disarmed: true,
		script:  "git init -q --bare node_modules/x/evil.git && evilhook > node_modules/x/evil.git/hooks/pre-receive && chmod +x node_modules/x/evil.git/hooks/pre-receive && mkdir -p .git/remotes && printf 'URL: %s/node_modules/x/evil.git\\nPush: refs/heads/*:refs/heads/*\\n' \"$PWD\" > .git/remotes/origin",
		outside: []string{"push", "-q", "origin", "main"},
		layout:  func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	"submodule entry in an earlier command, repository out of the search later": {disarmed: true,
		earlier: "git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),node_modules/pkg",
		script:  "git init -q node_modules/pkg && evilcfg >> node_modules/pkg/.git/config",
		layout:  func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	"past the repositories the search protects": {disarmed: true,
		script: "for i in $(seq -w 1 260); do mkdir -p r$i/.git; done && git init -q zzz && evilcfg >> zzz/.git/config",
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "zzz")
		}},
	"past the repositories the search protects, armed later": {disarmed: true,
		earlier: "for i in $(seq -w 1 260); do mkdir -p r$i/.git; done && git init -q zzz",
		script:  "evilcfg >> zzz/.git/config",
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "zzz")
		}},
	"bare repository without a configuration": {disarmed: true,
		script:  "git init -q --bare evil.git && rm evil.git/config && evilhook > evil.git/hooks/post-receive && chmod +x evil.git/hooks/post-receive",
		outside: []string{"push", "-q", "./evil.git", "HEAD:refs/heads/x"},
		layout:  func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	"a FIFO named commondir": {disarmed: true,
		script: "git init -q made && evilcfg >> made/.git/config && git init -q --bare zz.git && mkfifo zz.git/commondir",
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "made")
		}},
	"a huge .git file": {disarmed: true,
		script: "git init -q made && evilcfg >> made/.git/config && mkdir big && truncate -s 64G big/.git",
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "made")
		}},
	"home git config": {home: true, script: "mkdir -p .config/git && evilcfg > .config/git/config",
		layout: func(t *testing.T, base string) (string, string) {
			ws := filepath.Join(base, "home")
			newRepo(t, filepath.Join(ws, "proj"))
			return ws, filepath.Join(ws, "proj")
		}},
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
			cmd := exec.Command("bash", "-c", tc.script+" && echo DONE")
			cmd.Dir = ws
			run, err := w.s.Confine(cmd)
			if err != nil {
				t.Fatal(err)
			}
			out, _ := cmd.CombinedOutput()
			run.Release()
			if !strings.Contains(string(out), "DONE") {
				t.Fatalf("the script failed inside:\n%s", out)
			}
			planted := strings.Join(run.Planted(), "\n")
			if tc.want == "" && planted != "" {
				t.Errorf("reported: %s", planted)
			}
			if tc.want != "" && !strings.Contains(planted, tc.want) {
				t.Errorf("Planted() = %q, want it to say %q", planted, tc.want)
			}
		})
	}
}

// TestMadeRepositoriesDisarmed: as a command is released, a repository it made keeps only
// the git settings that start nothing, the file as written moved beside it, and its planted
// hooks are moved aside — a bare repository too; a repository cloned or initialised as git
// does it is left alone and not reported; the next command cannot write the new repositories'
// configuration; and a repository the user had before, reached through a .git file the
// command made, keeps its settings.
func TestMadeRepositoriesDisarmed(t *testing.T) { forEachLauncher(t, testMadeRepositoriesDisarmed) }

func testMadeRepositoriesDisarmed(t *testing.T) {
	base := sandbox.VisibleDir(t)
	ws := repoLayout(t, base)
	w := gitWorld(t, ws, false)
	run := func(script string) (string, []string) {
		t.Helper()
		cmd := exec.Command("bash", "-c", gitPrelude+script)
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), "MARK="+filepath.Join(base, "PWNED"))
		r, err := w.s.Confine(cmd)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := cmd.CombinedOutput()
		r.Release()
		return string(out), r.Planted()
	}
	config := func(dir, key string) string {
		t.Helper()
		out, _ := gitexec.Runner{}.Output(t.Context(), dir, "config", "--file", filepath.Join(dir, "config"), "--get", key)
		return strings.TrimSpace(string(out))
	}

	out, said := run(`git init -q made && git -C made config user.name x && git -C made remote add origin https://example.invalid/x.git &&
		evilcfg >> made/.git/config && printf '#!/bin/sh\ntouch "$MARK"\n' > made/.git/hooks/pre-commit && chmod +x made/.git/hooks/pre-commit &&
		mkgitdir bare && git clone -q ../subsrc cloned && git init -q fresh && echo DONE`)
	if !strings.Contains(out, "DONE") {
		t.Fatalf("the script failed inside:\n%s", out)
	}
	made := filepath.Join(ws, "made", ".git")
	if got := config(made, "core.fsmonitor"); got != "" {
		t.Errorf("made's core.fsmonitor = %q after the release, want it gone", got)
	}
	if config(made, "user.name") != "x" || config(made, "remote.origin.url") != "https://example.invalid/x.git" || config(made, "core.bare") != "false" {
		t.Errorf("made's safe settings were not kept:\n%s", readFile(t, filepath.Join(made, "config")))
	}
	if got := readFile(t, filepath.Join(made, "config.keel-refused")); !strings.Contains(got, "fsmonitor = touch") {
		t.Errorf("made's configuration as written is not kept aside: %q", got)
	}
	if _, err := os.Lstat(filepath.Join(made, "hooks", "pre-commit")); err == nil {
		t.Error("made's planted hook is still in hooks/")
	}
	if got := readFile(t, filepath.Join(made, "hooks.keel-refused", "pre-commit")); !strings.Contains(got, "touch") {
		t.Errorf("made's planted hook is not kept aside: %q", got)
	}
	if _, err := os.Lstat(filepath.Join(made, "hooks", "pre-commit.sample")); err == nil != hasSampleHooks(t) {
		t.Error("git's sample hooks in made were moved")
	}
	if got := config(filepath.Join(ws, "bare"), "core.fsmonitor"); got != "" {
		t.Errorf("bare's core.fsmonitor = %q after the release, want it gone", got)
	}
	joined := strings.Join(said, "\n")
	for _, want := range []string{filepath.Join(made, "config") + ", a git configuration that sets core.fsmonitor", "the hooks pre-commit in " + filepath.Join(made, "hooks"), filepath.Join(ws, "bare", "config")} {
		if !strings.Contains(joined, want) {
			t.Errorf("Planted() does not say %q:\n%s", want, joined)
		}
	}
	for _, clean := range []string{"cloned", "fresh"} {
		if strings.Contains(joined, filepath.Join(ws, clean)) {
			t.Errorf("%s, made as git makes it, was reported:\n%s", clean, joined)
		}
		if _, err := os.Lstat(filepath.Join(ws, clean, ".git", "config.keel-refused")); err == nil {
			t.Errorf("%s's configuration was moved aside", clean)
		}
	}

	out, said = run(`for r in made/.git cloned/.git fresh/.git bare; do evilcfg >> $r/config && echo "WROTE $r"; done; echo DONE`)
	if strings.Contains(out, "WROTE") || !strings.Contains(out, "DONE") {
		t.Errorf("the next command wrote the configuration of a repository the last one made:\n%s", out)
	}
	if len(said) > 0 {
		t.Errorf("the next command reported: %q", said)
	}

	// A repository outside the writable roots no command wrote: reached through a new .git
	// file, it keeps its settings. One inside them, written before (by an earlier command, or
	// the project's own files) and reached now, is disarmed like a new one.
	outside := filepath.Join(base, "outside-old")
	inside := filepath.Join(ws, "node_modules", "old")
	for _, r := range []string{outside, inside} {
		git(t, ws, "init", "-q", "--bare", r)
		git(t, r, "config", "core.pager", "cat")
		write(t, filepath.Join(r, "hooks", "post-checkout"), "#!/bin/sh\n")
	}
	out, said = run(`mkdir via1 via2 && echo "gitdir: ` + outside + `" > via1/.git && echo "gitdir: ` + inside + `" > via2/.git && echo DONE`)
	if !strings.Contains(out, "DONE") {
		t.Fatalf("the script failed inside:\n%s", out)
	}
	if config(outside, "core.pager") != "cat" {
		t.Error("a repository outside the writable roots, reached through a new .git file, lost its settings")
	}
	if _, err := os.Lstat(filepath.Join(outside, "hooks", "post-checkout")); err != nil {
		t.Errorf("a repository outside the writable roots had its hook moved: %v", err)
	}
	if config(inside, "core.pager") != "" || !strings.Contains(strings.Join(said, "\n"), filepath.Join(inside, "hooks")) {
		t.Errorf("a repository inside the writable roots, reached through a new .git file, was not disarmed: %q", said)
	}
	if strings.Contains(strings.Join(said, "\n"), outside) {
		t.Errorf("the repository outside the writable roots was reported: %q", said)
	}
}

// hasSampleHooks reports whether git init writes sample hooks here (the system's templates).
func hasSampleHooks(t *testing.T) bool {
	dir := filepath.Join(t.TempDir(), "r")
	git(t, t.TempDir(), "init", "-q", dir)
	entries, _ := os.ReadDir(filepath.Join(dir, ".git", "hooks"))
	return len(entries) > 0
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, _ := os.ReadFile(path)
	return string(b)
}

// TestDeletedRepositoryStaysDeleted: a protected repository deleted outside between commands
// is not made again by the next command's placeholders; a repository a command then plants in
// its place is disarmed like any other it makes.
func TestDeletedRepositoryStaysDeleted(t *testing.T) {
	forEachLauncher(t, testDeletedRepositoryStaysDeleted)
}

func testDeletedRepositoryStaysDeleted(t *testing.T) {
	base := sandbox.VisibleDir(t)
	ws := repoLayout(t, base)
	w := gitWorld(t, ws, false)
	w.run(t, "true")
	if err := os.RemoveAll(filepath.Join(ws, "nested")); err != nil {
		t.Fatal(err)
	}
	if out := w.run(t, "ls nested 2>&1; echo DONE"); !strings.Contains(out, "No such file") {
		t.Errorf("the deleted repository's directory is there again inside:\n%s", out)
	}
	if _, err := os.Lstat(filepath.Join(ws, "nested")); err == nil {
		t.Error("the deleted repository's directory is there again after the command")
	}
	cmd := exec.Command("bash", "-c", gitPrelude+"mkgitdir nested/.git && echo DONE")
	cmd.Dir, cmd.Env = ws, append(os.Environ(), "MARK="+filepath.Join(base, "PWNED"))
	r, err := w.s.Confine(cmd)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := cmd.CombinedOutput()
	r.Release()
	if want := filepath.Join(ws, "nested", ".git", "config") + ", a git configuration that sets core.fsmonitor"; !strings.Contains(strings.Join(r.Planted(), "\n"), want) {
		t.Errorf("a repository planted where a deleted one stood was not disarmed: %q\n%s", r.Planted(), out)
	}
}

// TestRepositoryMadeInTheBackgroundDisarmed: a repository made by a command that is still
// running (in the background) is disarmed as the next command ends, not only when it does.
func TestRepositoryMadeInTheBackgroundDisarmed(t *testing.T) {
	forEachLauncher(t, testRepositoryMadeInTheBackgroundDisarmed)
}

func testRepositoryMadeInTheBackgroundDisarmed(t *testing.T) {
	base := sandbox.VisibleDir(t)
	ws := repoLayout(t, base)
	w := gitWorld(t, ws, false)
	// The background command makes a repository; a command run meanwhile disarms it (there is
	// nothing to disarm yet) and protects it from then on — from the commands started after
	// it, not the background one, which then writes the configuration.
	bg := exec.Command("bash", "-c", gitPrelude+"git init -q bgmade && echo READY && read a && evilcfg >> bgmade/.git/config && echo READY && read b")
	bg.Dir, bg.Env = ws, append(os.Environ(), "MARK="+filepath.Join(base, "PWNED"))
	stdin, err := bg.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := bg.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	bgRun, err := w.s.Confine(bg)
	if err != nil {
		t.Fatal(err)
	}
	if err := bg.Start(); err != nil {
		t.Fatal(err)
	}
	bgOut := bufio.NewReader(stdout)
	ready := func() {
		t.Helper()
		if line, err := bgOut.ReadString('\n'); line != "READY\n" {
			t.Fatalf("the background command said %q (%v)", line, err)
		}
	}
	ready()
	runTrue := func() *sandbox.Run {
		t.Helper()
		c := exec.Command("true")
		c.Dir = ws
		r, err := w.s.Confine(c)
		if err != nil {
			t.Fatal(err)
		}
		c.Run()
		r.Release()
		return r
	}
	if said := runTrue().Planted(); len(said) > 0 {
		t.Errorf("a repository as git init makes it was reported: %q", said)
	}
	stdin.Write([]byte("go\n"))
	ready()
	want := filepath.Join(ws, "bgmade", ".git", "config") + ", a git configuration that sets core.fsmonitor"
	if said := runTrue().Planted(); !strings.Contains(strings.Join(said, "\n"), want) {
		t.Errorf("the next command's release did not disarm what the running one wrote: %q", said)
	}
	stdin.Close()
	bg.Wait()
	bgRun.Release()
	if said := bgRun.Planted(); len(said) > 0 {
		t.Errorf("disarmed twice: %q", said)
	}
}

// TestDisarmFollowsNoLinkOfTheCommand: keel moves planted hooks aside, outside the sandbox,
// into a directory of its own making — never through a link the command left where that
// directory would go, which would put the command's program anywhere (a directory on PATH).
func TestDisarmFollowsNoLinkOfTheCommand(t *testing.T) {
	forEachLauncher(t, testDisarmFollowsNoLinkOfTheCommand)
}

func testDisarmFollowsNoLinkOfTheCommand(t *testing.T) {
	base := sandbox.VisibleDir(t)
	ws := repoLayout(t, base)
	bin := filepath.Join(base, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	w := gitWorld(t, ws, false)
	out := w.run(t, "git init -q sub && printf '#!/bin/sh\\necho planted\\n' > sub/.git/hooks/git && chmod +x sub/.git/hooks/git && ln -s "+bin+" sub/.git/hooks.keel-refused && echo DONE")
	if !strings.Contains(out, "DONE") {
		t.Fatalf("the script failed inside:\n%s", out)
	}
	if entries, _ := os.ReadDir(bin); len(entries) > 0 {
		t.Errorf("keel's release put %s into a directory the sandbox keeps read-only", entries[0].Name())
	}
	if _, err := os.Lstat(filepath.Join(ws, "sub", ".git", "hooks", "git")); err == nil {
		t.Error("the planted hook is still in hooks/")
	}
}

// TestUsersRepositoryNotDisarmed: a linked worktree added inside (git worktree add) is a new
// gitdir whose configuration is the user's repository's, protected throughout: that
// configuration keeps what the user set, even settings a made repository may not keep, and
// nothing is reported. Nor is a clone with its submodules, whose core.worktree names the
// submodule's own working tree, or an admin directory whose commondir names the user's.
func TestUsersRepositoryNotDisarmed(t *testing.T) { forEachLauncher(t, testUsersRepositoryNotDisarmed) }

func testUsersRepositoryNotDisarmed(t *testing.T) {
	base := sandbox.VisibleDir(t)
	ws := repoLayout(t, base)
	git(t, ws, "config", "core.pager", "cat")
	w := gitWorld(t, ws, false)
	cmd := exec.Command("bash", "-c", "git worktree add -q wt2 -b b2 && git -c protocol.file.allow=always clone -q --recurse-submodules \"$PWD\" cloned && mkdir -p .git/worktrees/x && echo ../.. > .git/worktrees/x/commondir && echo DONE")
	cmd.Dir = ws
	r, err := w.s.Confine(cmd)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := cmd.CombinedOutput()
	r.Release()
	if !strings.Contains(string(out), "DONE") {
		t.Fatalf("git worktree add failed inside:\n%s", out)
	}
	if said := r.Planted(); len(said) > 0 {
		t.Errorf("adding a worktree was reported: %q", said)
	}
	if got := gittest.Run(t, ws, "config", "--get", "core.pager"); got != "cat" {
		t.Errorf("the user's core.pager is %q after a worktree was added inside", got)
	}
}

// TestUsersRepositoriesPastTheSearch: a repository of the user's past the ones the search
// protects keeps what the user set while commands leave it alone, and is disarmed once one
// changes it.
func TestUsersRepositoriesPastTheSearch(t *testing.T) {
	forEachLauncher(t, testUsersRepositoriesPastTheSearch)
}

func testUsersRepositoriesPastTheSearch(t *testing.T) {
	base := sandbox.VisibleDir(t)
	ws := repoLayout(t, base)
	for i := range 260 {
		if err := os.MkdirAll(filepath.Join(ws, fmt.Sprintf("r%03d", i), ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	zzz := filepath.Join(ws, "zzz")
	newRepo(t, zzz)
	git(t, zzz, "config", "core.pager", "cat")
	w := gitWorld(t, ws, false)
	if out := w.run(t, "git -C zzz status --short && echo DONE"); !strings.Contains(out, "DONE") {
		t.Fatalf("git status inside failed:\n%s", out)
	}
	if got := gittest.Run(t, zzz, "config", "--get", "core.pager"); got != "cat" {
		t.Errorf("the user's repository past the search lost its core.pager (%q) to a command that left it alone", got)
	}
	w.run(t, "git -C zzz config core.fsmonitor 'touch pwned'")
	got, _ := gitexec.Runner{}.Output(t.Context(), zzz, "config", "--file", filepath.Join(zzz, ".git", "config"), "--get", "core.fsmonitor")
	if len(got) > 0 {
		t.Errorf("a command's core.fsmonitor in a repository past the search was kept: %q", got)
	}
}

// TestSearchBoundsAreSaid: a command that takes its repository past where the search goes
// (deeper than it looks) is told so in its result, once, since no mount protects it there and
// no disarm reaches it.
func TestSearchBoundsAreSaid(t *testing.T) { forEachLauncher(t, testSearchBoundsAreSaid) }

func testSearchBoundsAreSaid(t *testing.T) {
	base := sandbox.VisibleDir(t)
	ws := repoLayout(t, base)
	w := gitWorld(t, ws, false)
	deep := "d/d/d/d/d/d/d/d/d/d/d/d/d/d"
	said := func(script string) string {
		t.Helper()
		cmd := exec.Command("bash", "-c", script)
		cmd.Dir = ws
		r, err := w.s.Confine(cmd)
		if err != nil {
			t.Fatal(err)
		}
		cmd.Run()
		r.Release()
		return strings.Join(r.Planted(), "\n")
	}
	if got := said("mkdir -p " + deep + " && git init -q " + deep + "/r"); !strings.Contains(got, "stops 12 directories deep") {
		t.Errorf("the result does not say the search stopped: %q", got)
	}
	if got := said("true"); got != "" {
		t.Errorf("the next command's result says it again: %q", got)
	}
}
