package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/sandbox"
)

// hooksRepo is a workspace that is a repository whose hooks are in hooksDir (core.hooksPath,
// as husky and lefthook set it), holding a commit-msg hook when it exists.
func hooksRepo(hooksDir string, exists bool) func(t *testing.T, base string) (string, string) {
	return func(t *testing.T, base string) (string, string) {
		ws := filepath.Join(base, "ws")
		newRepo(t, ws)
		git(t, ws, "config", "core.hooksPath", hooksDir)
		if exists {
			write(t, filepath.Join(ws, hooksDir, "commit-msg"), "#!/bin/sh\nexit 0\n")
		}
		return ws, ws
	}
}

// huskyRepo is a workspace whose hooks are husky 9's: core.hooksPath .husky/_, whose hooks
// only run .husky/<hook>, the project's script, when it exists.
func huskyRepo(t *testing.T, base string) (string, string) {
	ws := filepath.Join(base, "ws")
	newRepo(t, ws)
	git(t, ws, "config", "core.hooksPath", ".husky/_")
	write(t, filepath.Join(ws, ".husky", "_", "h"), "#!/bin/sh\nn=$(basename \"$0\")\ns=$(dirname \"$(dirname \"$0\")\")/$n\n[ ! -f \"$s\" ] && exit 0\nsh -e \"$s\" \"$@\"\n")
	write(t, filepath.Join(ws, ".husky", "_", "post-checkout"), "#!/bin/sh\n. \"$(dirname \"$0\")/h\"\n")
	if err := os.Chmod(filepath.Join(ws, ".husky", "_", "post-checkout"), 0o755); err != nil {
		t.Fatal(err)
	}
	return ws, ws
}

// homeRepo is a workspace that is both the user's home, with ~/.gitconfig holding cfg, and a
// repository.
func homeRepo(cfg string) func(t *testing.T, base string) (string, string) {
	return func(t *testing.T, base string) (string, string) {
		ws := filepath.Join(base, "home")
		newRepo(t, ws)
		write(t, filepath.Join(ws, ".gitconfig"), cfg)
		return ws, ws
	}
}

// includeRepo is a workspace that is a repository whose .git/config includes each of includes
// (as git config --add include.path, or the key given before a "=").
func includeRepo(files map[string]string, includes ...string) func(t *testing.T, base string) (string, string) {
	return func(t *testing.T, base string) (string, string) {
		ws := filepath.Join(base, "ws")
		newRepo(t, ws)
		for name, content := range files {
			write(t, filepath.Join(ws, name), content)
		}
		for _, inc := range includes {
			key, path, ok := strings.Cut(inc, "=")
			if !ok {
				key, path = "include.path", inc
			}
			git(t, ws, "config", "--add", key, path)
		}
		return ws, ws
	}
}

const postCheckout = "evilhook > %[1]s/post-checkout && chmod +x %[1]s/post-checkout"

// gitConfigAttacks plant a hook where core.hooksPath has git look for them, or a setting in a
// file git's configuration includes; git then checks out a new branch outside (status, for
// an include).
var gitConfigAttacks = map[string]gitAttack{
	"hooksPath existing": {script: "evilhook > .githooks/post-checkout && chmod +x .githooks/post-checkout",
		layout: hooksRepo(".githooks", true), outside: []string{"checkout", "-q", "-b", "y"}},
	"hooksPath existing hook rewritten": {script: "evilhook >> .githooks/commit-msg",
		layout: hooksRepo(".githooks", true), outside: []string{"commit", "-q", "--allow-empty", "-m", "x"}},
	"hooksPath absent (husky)": {script: "mkdir -p .husky/_ && evilhook > .husky/_/post-checkout && chmod +x .husky/_/post-checkout",
		layout: hooksRepo(".husky/_", false), outside: []string{"checkout", "-q", "-b", "y"}},
	"husky's hook script": {script: "evilhook > .husky/post-checkout",
		layout: huskyRepo, outside: []string{"checkout", "-q", "-b", "y"}},
	"hooksPath directory replaced": {script: "mv .githooks .githooks.old && mkdir .githooks && evilhook > .githooks/post-checkout && chmod +x .githooks/post-checkout",
		layout: hooksRepo(".githooks", true), outside: []string{"checkout", "-q", "-b", "y"}},
	"hooksPath in an included file": {script: "mkdir -p .githooks && evilhook > .githooks/post-checkout && chmod +x .githooks/post-checkout",
		layout:  includeRepo(map[string]string{"shared.cfg": "[core]\n\thooksPath = .githooks\n"}, "../shared.cfg"),
		outside: []string{"checkout", "-q", "-b", "y"}},
	"global hooksPath relative": {script: "mkdir -p .githooks && evilhook > .githooks/post-checkout && chmod +x .githooks/post-checkout",
		layout: homeRepo("[core]\n\thooksPath = .githooks\n"), home: true, outside: []string{"checkout", "-q", "-b", "y"}},
	"global hooksPath in home": {script: "mkdir -p hooks && evilhook > hooks/post-checkout && chmod +x hooks/post-checkout",
		layout: homeRepo("[core]\n\thooksPath = ~/hooks\n"), home: true, outside: []string{"checkout", "-q", "-b", "y"}},
	// No mount can stand in a working tree the command makes: keel moves the hooks aside as
	// it ends.
	"hooksPath in a linked worktree the command adds": {script: "git worktree add -q added && mkdir -p added/.githooks && " + strings.ReplaceAll(postCheckout, "%[1]s", "added/.githooks"),
		layout: hooksRepo(".githooks", true), disarmed: true, outside: []string{"-C", "added", "checkout", "-q", "-b", "y"}},
	"global hooksPath in a repository the command makes": {script: "git init -q made && mkdir -p made/.githooks && " + strings.ReplaceAll(postCheckout, "%[1]s", "made/.githooks") +
		" && git -C made -c user.name=x -c user.email=x@x commit -q --allow-empty -m x",
		layout: homeRepo("[core]\n\thooksPath = .githooks\n"), home: true, disarmed: true, outside: []string{"-C", "made", "checkout", "-q", "-b", "y"}},
	// A repository the command makes keeps no hooks path nor include of its own (disarm).
	"hooksPath of a repository the command makes": {script: "git init -q made && git -C made config core.hooksPath .githooks && mkdir -p made/.githooks && " +
		strings.ReplaceAll(postCheckout, "%[1]s", "made/.githooks") + " && git -C made -c user.name=x -c user.email=x@x commit -q --allow-empty -m x",
		layout: hooksRepo(".githooks", false), disarmed: true, outside: []string{"-C", "made", "checkout", "-q", "-b", "y"}},
	"include of a repository the command makes": {script: "git init -q made && evilcfg > made/inc.cfg && git -C made config include.path ../inc.cfg",
		layout: hooksRepo(".githooks", false), disarmed: true, outside: []string{"-C", "made", "status"}},

	"include existing": {script: "evilcfg >> .gitconfig",
		layout: includeRepo(map[string]string{".gitconfig": "[alias]\n\tst = status\n"}, "../.gitconfig")},
	"include in a subdirectory": {script: "evilcfg >> tools/git.cfg",
		layout: includeRepo(map[string]string{"tools/git.cfg": "[alias]\n\tst = status\n"}, "../tools/git.cfg")},
	"include absent": {script: "evilcfg > .gitconfig.local",
		layout: includeRepo(nil, "../.gitconfig.local")},
	"include replaced": {script: "mv tools tools.old && mkdir tools && evilcfg > tools/git.cfg",
		layout: includeRepo(map[string]string{"tools/git.cfg": "[alias]\n\tst = status\n"}, "../tools/git.cfg")},
	// The link itself is a command's to replace; keel makes it again as the command ends.
	"include through a link replaced": {script: "rm tools && mkdir tools && evilcfg > tools/git.cfg",
		layout: func(t *testing.T, base string) (string, string) {
			ws, gitIn := includeRepo(map[string]string{"shared/git.cfg": "[alias]\n\tst = status\n"}, "../tools/git.cfg")(t, base)
			if err := os.Symlink("shared", filepath.Join(ws, "tools")); err != nil {
				t.Fatal(err)
			}
			return ws, gitIn
		}, disarmed: true},
	"includeIf on another branch": {script: "evilcfg > other.cfg && git checkout -q -b other",
		layout: includeRepo(nil, "includeIf.onbranch:other.path=../other.cfg")},
	"include of an include": {script: "evilcfg >> tools/more.cfg",
		layout: includeRepo(map[string]string{".gitconfig": "[include]\n\tpath = tools/more.cfg\n", "tools/more.cfg": "[alias]\n\tst = status\n"}, "../.gitconfig")},
	"global include in home": {script: "evilcfg > work.cfg",
		layout: homeRepo("[include]\n\tpath = ~/work.cfg\n"), home: true},
}

// TestEscapeGitConfigPaths: what git's configuration names beyond the gitdir — the hooks
// directory of core.hooksPath (the repository's, an included file's, the user's, relative or
// not) and the files it includes (include.path, includeIf, recursively, the user's) — cannot
// be written inside, so git outside runs nothing planted there; in a working tree the
// command makes, the hooks are moved aside as it ends.
func TestEscapeGitConfigPaths(t *testing.T) { forEachLauncher(t, testEscapeGitConfigPaths) }

func testEscapeGitConfigPaths(t *testing.T) {
	for name, a := range gitConfigAttacks {
		t.Run(name, func(t *testing.T) {
			base := sandbox.VisibleDir(t)
			ws, gitIn := a.layout(t, base)
			w := gitWorld(t, ws, a.home)
			mark := filepath.Join(t.TempDir(), "PWNED")
			out := w.run(t, gitPrelude+a.script+" && echo ESCAPED", "MARK="+mark)
			if escaped := strings.Contains(out, "ESCAPED"); escaped != a.disarmed {
				t.Errorf("%q inside the sandbox: succeeded %v, want %v:\n%s", a.script, escaped, a.disarmed, out)
			}
			if _, err := os.Lstat(mark); err == nil {
				t.Fatalf("the hook ran inside the sandbox already: the test proves nothing\n%s", out)
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

// TestGitConfigPathsInside: in a repository whose hooks path and included file exist, git
// inside still reads them (a commit runs the commit-msg hook, an alias from the included file
// works); the placeholders for absent ones are gone after the command.
func TestGitConfigPathsInside(t *testing.T) { forEachLauncher(t, testGitConfigPathsInside) }

func testGitConfigPathsInside(t *testing.T) {
	base := sandbox.VisibleDir(t)
	ws := filepath.Join(base, "ws")
	newRepo(t, ws)
	write(t, filepath.Join(ws, ".githooks", "commit-msg"), "#!/bin/sh\necho HOOK-RAN\n")
	if err := os.Chmod(filepath.Join(ws, ".githooks", "commit-msg"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(ws, "tools", "git.cfg"), "[alias]\n\tsee = status --short\n")
	git(t, ws, "config", "core.hooksPath", ".githooks")
	git(t, ws, "config", "--add", "include.path", "../tools/git.cfg")
	git(t, ws, "config", "--add", "include.path", "../absent.cfg")
	git(t, ws, "config", "--add", "includeIf.onbranch:x.path", "../absent-dir/x.cfg")
	w := gitWorld(t, ws, false)
	out := w.run(t, "echo b > b && git see && git add b && git -c user.name=x -c user.email=x@x commit -q -m b && echo COMMITTED")
	for _, want := range []string{"?? b", "HOOK-RAN", "COMMITTED"} {
		if !strings.Contains(out, want) {
			t.Errorf("inside, the output lacks %q:\n%s", want, out)
		}
	}
	for _, p := range []string{"absent.cfg", "absent-dir/x.cfg"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
			t.Errorf("the placeholder %s stays after the command", p)
		}
	}
}
