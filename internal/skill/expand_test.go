package skill

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/procgroup"
	"github.com/keel-dev/keel/internal/swaptest"
	"github.com/keel-dev/keel/internal/waittest"
)

// TestShellLines runs real shell commands: allowed ones are replaced by their output, denied
// ones do not run (the marker file proves it) and leave a note in their place.
func TestShellLines(t *testing.T) {
	l := newLayout(t)
	write(t, l.root, ".keel/commands/ctx.md", "---\nallowed-tools: Bash(echo:*)\n---\n"+
		"Status: !`echo hello`\n"+
		"!echo whole line\n"+
		"Denied: !`touch denied-marker`\n"+
		"![an image](x.png) stays\n"+
		"```\n!`echo in a fence stays`\n```\n"+
		"Failing: !`echo out; exit 3`\n"+
		"Cwd: !`basename \"$PWD\"`")
	var asked [][]string
	allow := func(ctx context.Context, cmd string, allowed []string) error {
		asked = append(asked, append([]string{cmd}, allowed...))
		if strings.HasPrefix(cmd, "touch") {
			return errors.New("permission denied")
		}
		return nil
	}
	c, _ := l.load(t, func(o *Options) { o.AllowShell = allow })
	inv, ok, err := c.Expand(t.Context(), "/ctx")
	if !ok || err != nil {
		t.Fatalf("Expand = %v, %v", ok, err)
	}
	want := "Status: hello\n" +
		"whole line\n" +
		"Denied: [shell command not run: touch denied-marker: permission denied]\n" +
		"![an image](x.png) stays\n" +
		"```\n!`echo in a fence stays`\n```\n" +
		"Failing: out\n[echo out; exit 3: exit status 3]\n" +
		"Cwd: api"
	if diff := cmp.Diff(want, inv.Text); diff != "" {
		t.Errorf("text mismatch (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(l.cwd, "denied-marker")); !os.IsNotExist(err) {
		t.Errorf("denied command ran: stat = %v", err)
	}
	wantAsked := [][]string{
		{"echo hello", "Bash(echo:*)"}, {"echo whole line", "Bash(echo:*)"}, {"touch denied-marker", "Bash(echo:*)"},
		{"echo out; exit 3", "Bash(echo:*)"}, {`basename "$PWD"`, "Bash(echo:*)"},
	}
	if diff := cmp.Diff(wantAsked, asked); diff != "" {
		t.Errorf("permission checks mismatch (-want +got):\n%s", diff)
	}
	if len(inv.Shell) != 5 || !inv.Shell[2].Denied || inv.Shell[0].Denied {
		t.Errorf("shell runs = %+v", inv.Shell)
	}

	// Without a predicate nothing runs.
	c, _ = l.load(t)
	inv, _, _ = c.Expand(t.Context(), "/ctx")
	if _, err := os.Stat(filepath.Join(l.cwd, "denied-marker")); !os.IsNotExist(err) || strings.Contains(inv.Text, "Status: hello") {
		t.Errorf("shell ran without AllowShell: %q", inv.Text)
	}
}

func TestShellArgumentsAreSubstitutedFirst(t *testing.T) {
	l := newLayout(t)
	write(t, l.root, ".keel/commands/show.md", "Log: !`echo $1`")
	var got string
	c, _ := l.load(t, func(o *Options) {
		o.AllowShell = func(_ context.Context, cmd string, _ []string) error { got = cmd; return nil }
	})
	inv, _, err := c.Expand(t.Context(), "/show abc")
	if err != nil {
		t.Fatal(err)
	}
	// The check sees the command as it will run, arguments included.
	if got != "echo abc" || inv.Text != "Log: abc" {
		t.Errorf("checked %q, text %q", got, inv.Text)
	}
}

func TestFileReferences(t *testing.T) {
	l := newLayout(t)
	write(t, l.cwd, "notes.md", "the notes")
	write(t, l.cwd, "sub/a.go", "package a")
	write(t, l.home, "global.md", "from home")
	write(t, l.cwd, "bin.dat", "a\x00b")
	write(t, l.root, ".keel/commands/refs.md",
		"Read @notes.md, then @sub/a.go and @~/global.md.\n"+
			"Again @notes.md; missing @nope.md stays; mail me@notes.md; `@notes.md` in code.\n"+
			"Binary @bin.dat is skipped; @$1 from args.\n"+
			"```\n@sub/a.go in a fence\n```")
	c, _ := l.load(t)
	inv, _, err := c.Expand(t.Context(), "/refs sub/a.go")
	if err != nil {
		t.Fatal(err)
	}
	want := "Read @notes.md, then @sub/a.go and @~/global.md.\n" +
		"Again @notes.md; missing @nope.md stays; mail me@notes.md; `@notes.md` in code.\n" +
		"Binary @bin.dat is skipped; @sub/a.go from args.\n" +
		"```\n@sub/a.go in a fence\n```\n\n" +
		"<file path=\"notes.md\">\nthe notes\n</file>\n\n" +
		"<file path=\"sub/a.go\">\npackage a\n</file>\n\n" +
		"<file path=\"~/global.md\">\nfrom home\n</file>"
	if diff := cmp.Diff(want, inv.Text); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

// TestSkillDirectory checks that a skill's body names its base directory, so the model can
// read the files beside SKILL.md, and that ${CLAUDE_SKILL_DIR} resolves to it.
func TestSkillDirectory(t *testing.T) {
	l := newLayout(t)
	write(t, l.root, ".keel/skills/tpl/SKILL.md", skillFile("tpl", "templates", "Use templates/plan.md.\nRun ${CLAUDE_SKILL_DIR}/scripts/x.sh"))
	write(t, l.root, ".keel/skills/tpl/templates/plan.md", "# Plan")
	c, _ := l.load(t)
	inv, _, err := c.Expand(t.Context(), "/tpl")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(l.root, ".keel", "skills", "tpl")
	want := "Base directory for this skill: " + dir + "\n" +
		"Files it mentions by relative path are in that directory.\n\n" +
		"Use templates/plan.md.\nRun " + dir + "/scripts/x.sh"
	if diff := cmp.Diff(want, inv.Text); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(dir, "templates", "plan.md")); err != nil {
		t.Errorf("file beside SKILL.md not at the announced directory: %v", err)
	}
}

// TestFileReferencesFromModelArguments checks that the model cannot read files by passing
// @paths as a skill's arguments, while the author's own @paths still load.
func TestFileReferencesFromModelArguments(t *testing.T) {
	l := newLayout(t)
	write(t, l.cwd, "guide.md", "the guide")
	write(t, l.home, ".ssh/id_rsa", "PRIVATE KEY")
	write(t, l.root, ".keel/skills/s/SKILL.md", skillFile("s", "d", "See @guide.md about $ARGUMENTS"))
	c, _ := l.load(t)
	inv, err := c.Invoke(t.Context(), "s", "@~/.ssh/id_rsa", ByModel, l.cwd)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(inv.Text, "PRIVATE KEY") || !strings.Contains(inv.Text, "<file path=\"guide.md\">\nthe guide") {
		t.Errorf("text = %q", inv.Text)
	}
	inv, err = c.Invoke(t.Context(), "s", "@~/.ssh/id_rsa", ByUser, l.cwd)
	if err != nil || !strings.Contains(inv.Text, "PRIVATE KEY") {
		t.Errorf("a user's own @path was not inlined: %q, %v", inv.Text, err)
	}
}

// TestShellLineTimeoutEndsItsChildren: a "!" line that outlives its time limit is stopped
// with everything it started, not only its shell.
func TestShellLineTimeoutEndsItsChildren(t *testing.T) {
	l := newLayout(t)
	write(t, l.root, ".keel/commands/slow.md", "Slow: !`sleep 600 & echo $! > child.pid; wait`")
	allow := func(context.Context, string, []string) error { return nil }
	c, _ := l.load(t, func(o *Options) { o.AllowShell = allow; o.ShellTimeout = waittest.Scale(500 * time.Millisecond) })
	if _, ok, err := c.Expand(t.Context(), "/slow"); !ok || err != nil {
		t.Fatalf("Expand = %v, %v", ok, err)
	}
	b, err := os.ReadFile(filepath.Join(l.cwd, "child.pid"))
	if err != nil {
		t.Fatalf("the line did not start its child: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	waittest.Until(t, "the line's child to be killed with it", func() bool { return !procgroup.Alive(pid) })
}

// TestRefusedEntryFilesLendNothingToTheListing checks discovery asks Refuse too: a command
// file and a SKILL.md that link to a refused file have no description, so the first line
// of the file they lead to would otherwise be listed to the model as theirs. Neither is
// loaded, and the problem says which file and why.
func TestRefusedEntryFilesLendNothingToTheListing(t *testing.T) {
	l := newLayout(t)
	secret := write(t, l.cwd, "secrets/token", "TOKEN-SECRET")
	link := func(rel string) string {
		path := filepath.Join(l.root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(secret, path); err != nil {
			t.Fatal(err)
		}
		return path
	}
	leaks := []string{link(".keel/commands/leak.md"), link(".keel/skills/leaky/SKILL.md")}
	c, problems := l.load(t, func(o *Options) { o.Refuse = swaptest.RefuseUnder(filepath.Dir(secret)) })
	entries, _ := c.Entries()
	for _, e := range entries {
		if strings.Contains(fmt.Sprint(e), "TOKEN-SECRET") {
			t.Errorf("listed: %+v", e)
		}
	}
	for _, leak := range leaks {
		found := false
		for _, p := range problems {
			found = found || (p.Path == leak && strings.Contains(p.Msg, "is not read"))
		}
		if !found {
			t.Errorf("no problem names %s: %+v", leak, problems)
		}
	}
}

// TestRefusedFilesAreNotRead checks Options.Refuse: a body's @mention of a file it refuses is
// left out with a note naming why (the author's or an argument), the mention beside it is
// still attached, and a command whose own file is refused (a link to a secret) is not read.
func TestRefusedFilesAreNotRead(t *testing.T) {
	l := newLayout(t)
	write(t, l.cwd, "guide.md", "the guide")
	secret := write(t, l.cwd, "secrets/token", "TOKEN-SECRET")
	write(t, l.root, ".keel/commands/refs.md", "See @secrets/token and @guide.md; $ARGUMENTS")
	leak := filepath.Join(l.root, ".keel", "commands", "leak.md")
	if err := os.Symlink(secret, leak); err != nil {
		t.Fatal(err)
	}
	refuse := func(path string) string {
		if path == secret || path == leak {
			return "a Read deny rule covers it"
		}
		return ""
	}
	c, _ := l.load(t, func(o *Options) { o.Refuse = refuse })
	inv, err := c.Invoke(t.Context(), "refs", "@secrets/token", ByUser, l.cwd)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(inv.Text, "TOKEN-SECRET") || !strings.Contains(inv.Text, "<file path=\"guide.md\">\nthe guide") ||
		strings.Count(inv.Text, "[keel: @secrets/token is not included: a Read deny rule covers it]") != 1 {
		t.Errorf("text = %q", inv.Text)
	}
	if inv, err := c.Invoke(t.Context(), "leak", "", ByUser, l.cwd); err == nil || strings.Contains(inv.Text, "TOKEN-SECRET") {
		t.Errorf("a command file that links to a refused file was read: %q, %v", inv.Text, err)
	}
}
