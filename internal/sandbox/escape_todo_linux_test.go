package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/sandbox"
)

// todoPrelude defines, for the scripts of the to-do list tests, stoprebase and stoppick:
// in the repository at hand, a branch topic (commits a and t) and main (commit b) whose
// README conflicts with a's, then a rebase of topic onto main (a cherry-pick of topic's
// commits onto main) that stops on that conflict.
const todoPrelude = `export GIT_AUTHOR_NAME=x GIT_AUTHOR_EMAIL=x@x GIT_COMMITTER_NAME=x GIT_COMMITTER_EMAIL=x@x
branches() { git checkout -q -b topic && echo a > README && git commit -qam a && echo t > t && git add t && git commit -qm t && git checkout -q main && echo b > README && git commit -qam b; }
stoprebase() { branches && git checkout -q topic && ! git rebase main >/dev/null 2>&1 && test -f .git/rebase-merge/git-rebase-todo; }
stoppick() { branches && ! git cherry-pick main..topic >/dev/null 2>&1 && test -f .git/sequencer/todo; }
`

// continueOutside resolves the conflict todoPrelude's branches make and continues the rebase
// (or cherry-pick) in repo outside the sandbox, as the user would; it returns git's output.
func continueOutside(t *testing.T, repo, base, what string) string {
	t.Helper()
	write(t, filepath.Join(repo, "README"), "resolved\n")
	home := t.TempDir()
	out := gitOutside(t, repo, home, base, "add", "README")
	return out + gitOutside(t, repo, home, base, "-c", "core.editor=true", "-c", "user.name=x", "-c", "user.email=x@x", what, "--continue")
}

// TestEscapeRebaseTodo: a stopped rebase's (or cherry-pick's) to-do list is no mount's to
// protect — git writes it as it rebases inside — and an exec line a command adds to it would
// run when the user continues outside; so would a merge strategy it names that is not git's
// own (git runs git-merge-<name>, found through the working tree when the name has a slash),
// which goes aside. As the command is released, each exec line of a
// to-do list it wrote, in a protected repository or one it made, becomes a comment, the file
// as written is kept beside it and the result says so; the rebase can still be continued. A
// to-do list (or its directory) that is a link, or a FIFO, goes aside whole.
func TestEscapeRebaseTodo(t *testing.T) { forEachLauncher(t, testEscapeRebaseTodo) }

func testEscapeRebaseTodo(t *testing.T) {
	rebaseTodo := filepath.Join(".git", "rebase-merge", "git-rebase-todo")
	for name, tc := range map[string]struct {
		script string
		// repo is where the repository is below the workspace; todo the to-do list's path in it.
		repo, todo string
		// what is continued outside: rebase or cherry-pick.
		what string
		// said is what the result must say; continued, that the rebase then ends outside.
		said      string
		continued bool
	}{
		"exec appended": {script: `stoprebase && printf 'exec touch %s\n' "$MARK" >> .git/rebase-merge/git-rebase-todo`,
			todo: rebaseTodo, what: "rebase", said: "a to-do list with 1 exec line,", continued: true},
		"x indented, two of them": {script: `stoprebase && printf '  x touch %s\n\tx touch %s\n' "$MARK" "$MARK" >> .git/rebase-merge/git-rebase-todo`,
			todo: rebaseTodo, what: "rebase", said: "a to-do list with 2 exec lines", continued: true},
		"exec first, in a repository the command made": {
			script: `git init -q -b main made && cd made && echo r > README && git add README && git commit -qm r && stoprebase && { printf 'exec touch %s\n' "$MARK"; cat .git/rebase-merge/git-rebase-todo; } > x && mv x .git/rebase-merge/git-rebase-todo`,
			repo:   "made", todo: rebaseTodo, what: "rebase", said: "a to-do list with 1 exec line,", continued: true},
		"cherry-pick's sequencer": {script: `stoppick && printf 'exec touch %s\n' "$MARK" >> .git/sequencer/todo`,
			todo: filepath.Join(".git", "sequencer", "todo"), what: "cherry-pick", said: "a to-do list with 1 exec line,"},
		"a merge strategy in the working tree": {script: `stoprebase && echo ../evil > .git/rebase-merge/strategy && mkdir git-merge-.. && printf '#!/bin/sh\ntouch %s\nexit 1\n' "$MARK" > git-merge-../evil && chmod +x git-merge-../evil`,
			todo: filepath.Join(".git", "rebase-merge", "strategy"), what: "rebase", said: `names the merge strategy "../evil"`, continued: true},
		"a merge strategy in the cherry-pick's options": {script: `stoppick && printf '[options]\n\tstrategy = ../evil\n' >> .git/sequencer/opts && mkdir git-merge-.. && printf '#!/bin/sh\ntouch %s\nexit 1\n' "$MARK" > git-merge-../evil && chmod +x git-merge-../evil`,
			todo: filepath.Join(".git", "sequencer", "opts"), what: "cherry-pick", said: `names the merge strategy "../evil"`},
		"a link": {script: `stoprebase && { cat .git/rebase-merge/git-rebase-todo; printf 'exec touch %s\n' "$MARK"; } > evil && ln -sf ../../evil .git/rebase-merge/git-rebase-todo`,
			todo: rebaseTodo, what: "rebase", said: "which is not a regular file"},
		"a FIFO": {script: `stoprebase && rm .git/rebase-merge/git-rebase-todo && mkfifo .git/rebase-merge/git-rebase-todo`,
			todo: rebaseTodo, what: "rebase", said: "which is not a regular file"},
		"its directory a link": {script: `stoprebase && cp -r .git/rebase-merge evil && printf 'exec touch %s\n' "$MARK" >> evil/git-rebase-todo && rm -rf .git/rebase-merge && ln -s ../evil .git/rebase-merge`,
			todo: filepath.Join(".git", "rebase-merge"), what: "rebase", said: "is a link or a file where git keeps a stopped rebase"},
	} {
		t.Run(name, func(t *testing.T) {
			base := sandbox.VisibleDir(t)
			ws := repoLayout(t, base)
			w := gitWorld(t, ws, false)
			mark := filepath.Join(base, "PWNED")
			out, said := w.say(t, todoPrelude+tc.script+" && echo DONE", "MARK="+mark)
			if !strings.Contains(out, "DONE") {
				t.Fatalf("the script failed inside:\n%s", out)
			}
			repo := filepath.Join(ws, tc.repo)
			todo := filepath.Join(repo, tc.todo)
			if !strings.Contains(said, todo) || !strings.Contains(said, tc.said) {
				t.Errorf("the result does not say %q of %s:\n%s", tc.said, todo, said)
			}
			if fi, err := os.Lstat(todo); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
				t.Fatal("the to-do list is still a FIFO, on which git outside would wait for ever")
			}
			aside, err := os.Lstat(todo + ".keel-refused")
			if err != nil {
				t.Errorf("the to-do list as written is not kept beside it: %v", err)
			}
			if b, err := os.ReadFile(todo); err == nil && aside != nil && aside.Mode().IsRegular() {
				for line := range strings.SplitSeq(string(b), "\n") {
					if l := strings.TrimLeft(line, " \t"); strings.HasPrefix(l, "exec") || strings.HasPrefix(l, "x ") {
						t.Errorf("the to-do list still holds %q", line)
					}
				}
				if !strings.Contains(readFile(t, todo+".keel-refused"), "touch "+mark) {
					t.Errorf("the file as written lacks the exec line:\n%s", readFile(t, todo+".keel-refused"))
				}
			}
			got := continueOutside(t, repo, base, tc.what)
			if _, err := os.Lstat(mark); err == nil {
				t.Fatalf("git %s --continue outside ran what the command planted:\n%s", tc.what, got)
			}
			if tc.continued {
				if _, err := os.Lstat(filepath.Join(repo, ".git", "rebase-merge")); err == nil {
					t.Errorf("the rebase did not end when continued outside:\n%s", got)
				}
				if log := gittestLog(t, repo); !strings.HasPrefix(log, "t\na\nb\n") {
					t.Errorf("the rebase continued outside did not apply the rest: log %q\n%s", log, got)
				}
			}
		})
	}
}

// TestRebaseTodoLeftAlone: a rebase stopped on a conflict inside, its to-do list holding no
// exec line, is left as git wrote it and continues outside; so is a to-do list the user's
// own rebase wrote outside before the command, exec lines and all.
func TestRebaseTodoLeftAlone(t *testing.T) { forEachLauncher(t, testRebaseTodoLeftAlone) }

func testRebaseTodoLeftAlone(t *testing.T) {
	base := sandbox.VisibleDir(t)
	ws := repoLayout(t, base)
	w := gitWorld(t, ws, false)
	todo := filepath.Join(ws, ".git", "rebase-merge", "git-rebase-todo")
	out, said := w.say(t, todoPrelude+"stoprebase && echo DONE && cat .git/rebase-merge/git-rebase-todo")
	if !strings.Contains(out, "DONE") {
		t.Fatalf("the rebase did not stop inside:\n%s", out)
	}
	if said != "" {
		t.Errorf("a rebase stopped inside, with no exec line, was reported: %q", said)
	}
	if _, written, _ := strings.Cut(out, "DONE\n"); readFile(t, todo) != written || written == "" {
		t.Errorf("the to-do list changed at the release: %q, git wrote %q", readFile(t, todo), written)
	}
	if _, err := os.Lstat(todo + ".keel-refused"); err == nil {
		t.Error("a to-do list with no exec line was moved aside")
	}
	if got := continueOutside(t, ws, base, "rebase"); !strings.HasPrefix(gittestLog(t, ws), "t\na\nb\n") {
		t.Errorf("the rebase stopped inside did not continue outside:\n%s", got)
	}

	// The user's own rebase, with exec lines, stopped outside before a command runs.
	user := filepath.Join(ws, "nested")
	git(t, user, "checkout", "-q", "-b", "topic")
	for _, c := range []string{"a", "t"} {
		write(t, filepath.Join(user, map[string]string{"a": "README", "t": "t"}[c]), c+"\n")
		git(t, user, "add", "-A")
		git(t, user, "commit", "-q", "-m", c)
	}
	git(t, user, "checkout", "-q", "main")
	write(t, filepath.Join(user, "README"), "b\n")
	git(t, user, "commit", "-q", "-am", "b")
	git(t, user, "checkout", "-q", "topic")
	gitOutside(t, user, t.TempDir(), base, "-c", "user.name=x", "-c", "user.email=x@x", "rebase", "-x", "true", "main")
	userTodo := filepath.Join(user, ".git", "rebase-merge", "git-rebase-todo")
	before := readFile(t, userTodo)
	if !strings.Contains(before, "exec true") {
		t.Fatalf("the user's rebase did not stop with exec lines to come: %q", before)
	}
	if _, said := w.say(t, "git -C nested status --short >/dev/null && echo DONE"); said != "" {
		t.Errorf("the user's to-do list, written before the command, was reported: %q", said)
	}
	if after := readFile(t, userTodo); after != before {
		t.Errorf("the user's to-do list changed: %q, was %q", after, before)
	}
}
