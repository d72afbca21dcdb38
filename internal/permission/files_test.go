package permission

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/gittest"
	"github.com/keel-dev/keel/internal/waittest"
)

// fileFixture is a project with secrets/token.txt, protected/keep.txt, src/a.go and x.txt,
// a git repository at its root.
func fileFixture(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"secrets/token.txt", "protected/keep.txt", "src/a.go", "x.txt", ".git/HEAD"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func projectRules(t *testing.T, dir string, b Behavior, texts ...string) []Rule {
	t.Helper()
	var out []Rule
	for _, text := range texts {
		r, err := ParseRule(text, b, Source{Name: "project", Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

type cmdCase struct {
	cmd  string
	want Behavior
}

func checkCommands(t *testing.T, c *Checker, dir string, mode Mode, cases []cmdCase) {
	t.Helper()
	for _, tt := range cases {
		want := tt.want
		if mode == ModeDontAsk && want == Ask {
			want = Deny
		}
		if d := c.Evaluate(Request{Tool: "Bash", Command: tt.cmd, Cwd: dir}); d.Behavior != want {
			t.Errorf("%s: %q got %s (%s); want %s", mode, tt.cmd, d.Behavior, d.Reason, want)
		}
	}
}

// TestReadDenyArgumentsAsBashExpands: under prefix rules that read, a deny Read rule holds
// against every spelling bash expands differently from a plain path — glob classes, $PWD
// and ~+, ANSI-C and locale quoting, globs after <, glued option values — and against
// programs that read whole trees (grep -r, rg, git grep, git show REV:path, git archive,
// tar -c, cp -r, find -exec). What keel cannot resolve asks; plain reads elsewhere still run.
func TestReadDenyArgumentsAsBashExpands(t *testing.T) {
	dir := fileFixture(t)
	rules := append(projectRules(t, dir, Deny, "Read(./secrets/**)"), mustRules(t, Allow, "Bash(cat:*)", "Bash(grep:*)",
		"Bash(rg:*)", "Bash(git grep:*)", "Bash(git show:*)", "Bash(git archive:*)", "Bash(git status:*)", "Bash(git log:*)",
		"Bash(git diff:*)", "Bash(tar:*)", "Bash(cp:*)", "Bash(find:*)", "Bash(echo:*)", "Bash(ls:*)", "Bash(xargs:*)")...)
	cases := []cmdCase{
		{"cat secret[!x]/token.txt", Deny},
		{"cat secret[^x]/token.txt", Deny},
		{"cat secret[[:alpha:]]/token.txt", Deny},
		{"cat sec[r]ets/tok?n.txt", Deny},
		{"cat {src,secrets}/token.txt", Deny},
		{`cat "$PWD/secrets/token.txt"`, Deny},
		{`cat "$PWD"/secrets/token.txt`, Deny},
		{`cat ${PWD}/secrets/token.txt`, Deny},
		{"cat ~+/secrets/token.txt", Deny},
		{`cat $'secrets/token.txt'`, Deny},
		{`cat $'secret\x73/token.txt'`, Deny},
		{`cat $"secrets/token.txt"`, Deny},
		{"cat < secre*/token.txt", Deny},
		{"cat < secret[!x]/token.txt", Deny},
		{"grep -fsecrets/token.txt x.txt", Deny},
		{"grep --file=secrets/token.txt x.txt", Deny},
		{"git show HEAD:secrets/token.txt", Deny},
		{`cat "$X/token.txt"`, Ask},
		{"cat ~-/token.txt", Ask},
		{"cat ~root/token.txt", Ask},
		{"cat $(echo secrets)/token.txt", Ask},
		{"cat `echo secrets`/token.txt", Ask},
		{"cat @(secrets)/token.txt", Ask},
		{"grep -r TOKEN .", Ask},
		{"grep -R TOKEN", Ask},
		{"rg TOKEN", Ask},
		{"rg TOKEN .", Ask},
		{"git archive HEAD", Ask},
		{"git log -p", Ask},
		{"tar -c .", Ask},
		{"tar czf out.tgz .", Ask},
		{"cp -r . /tmp/elsewhere", Ask},
		{"find . -exec cat {} +", Ask},
		{"ls | xargs cat", Ask},
		// Positive controls: reads elsewhere still run.
		{"cat src/a.go", Allow},
		{"cat src/*.go x.txt", Allow},
		{"grep -r x src", Allow},
		{"rg TOKEN src", Allow},
		{"git status", Allow},
		{"git log --oneline", Allow},
		{"find src -name '*.go'", Allow},
		{"tar -cf out.tar src", Allow},
		{`echo "$HOME" $X`, Allow},
		{"ls | xargs echo", Allow},
	}
	for _, mode := range []Mode{ModeDefault, ModeDontAsk, ModeBypassPermissions} {
		c := New(Config{Policy: Policy{Mode: mode, Rules: rules, Dirs: []string{dir}}, Home: t.TempDir()})
		checkCommands(t, c, dir, mode, cases)
	}
}

// TestGitReadsTrackedFiles: git diff and git grep without revisions print only files git
// tracks, so an untracked file a rule denies lets them run, and a tracked one makes them ask
// (keel reads the index itself); git show and git log -p read history, which may hold any
// file, and ask either way.
func TestGitReadsTrackedFiles(t *testing.T) {
	repo := gittest.New(t)
	repo.Write("src/a.go", "package a\n")
	repo.Commit("a")
	repo.Write(".env", "TOKEN=1\n")
	rules := append(projectRules(t, repo.Dir, Deny, "Read(./.env)"), mustRules(t, Allow, "Bash(git diff:*)", "Bash(git grep:*)",
		"Bash(git show:*)", "Bash(git log:*)")...)
	c := New(Config{Policy: Policy{Mode: ModeDefault, Rules: rules, Dirs: []string{repo.Dir}}})
	untracked := []cmdCase{
		{"git diff", Allow}, {"git diff --stat", Allow}, {"git grep TOKEN", Allow}, {"git grep -e TOKEN -- src", Allow},
		{"git show", Ask}, {"git log -p", Ask}, {"git diff HEAD~1", Ask}, {"git diff --cached", Ask}, {"git grep TOKEN HEAD", Ask},
	}
	checkCommands(t, c, repo.Dir, ModeDefault, untracked)
	repo.Git("add", ".env")
	checkCommands(t, c, repo.Dir, ModeDefault, []cmdCase{{"git diff", Ask}, {"git grep TOKEN", Ask}, {"git diff -- src", Allow}})
}

// TestEditDenySeesArguments: in bypassPermissions a deny Edit rule holds against redirection
// globs and the arguments programs write — output options, in-place edits, tee, cp, mv,
// install and ln targets, find -delete, truncate, dd of=, sed's w command — and a program
// that writes a whole tree asks. Reading a protected file and writing elsewhere still run.
func TestEditDenySeesArguments(t *testing.T) {
	dir := fileFixture(t)
	rules := projectRules(t, dir, Deny, "Edit(./protected/**)")
	cases := []cmdCase{
		{"echo x > protecte[d]/keep.txt", Deny},
		{"echo x > protected/keep.txt", Deny},
		{"echo x >> prot*/keep.txt", Deny},
		{"sort -o protected/keep.txt x.txt", Deny},
		{"sort --output=protected/keep.txt x.txt", Deny},
		{"sort -oprotected/keep.txt x.txt", Deny},
		{"sed -i s/x/y/ protected/keep.txt", Deny},
		{"sed -i.bak s/x/y/ protected/keep.txt", Deny},
		{"sed 'w protected/keep.txt' x.txt", Deny},
		{"sed -n 's/x/y/w protected/keep.txt' x.txt", Deny},
		{"tee protected/keep.txt", Deny},
		{"tee -a protected/keep.txt < x.txt", Deny},
		{"cp x.txt protected/keep.txt", Deny},
		{"cp -t protected x.txt", Deny},
		{"mv x.txt protected/", Deny},
		{"install x.txt protected/keep.txt", Deny},
		{"ln -sf x.txt protected/keep.txt", Deny},
		{"find protected -delete", Deny},
		{"truncate -s 0 protected/keep.txt", Deny},
		{"dd if=x.txt of=protected/keep.txt", Deny},
		{"rm -rf protected", Deny},
		{"curl -o protected/keep.txt http://127.0.0.1:9/", Deny},
		{"git diff --output=protected/keep.txt", Deny},
		{"mytool protected/keep.txt", Deny},
		{"find . -delete", Ask},
		{"rm -r .", Ask},
		{"tar -xf a.tar", Ask},
		{"unzip a.zip", Ask},
		{"git checkout .", Ask},
		{"git stash", Ask},
		{"echo x > $OUT", Ask},
		// Positive controls.
		{"cat protected/keep.txt", Allow},
		{"cp protected/keep.txt src/copy.txt", Allow},
		{"echo x > x.txt", Allow},
		{"sort -o x.txt x.txt", Allow},
		{"git status", Allow},
		{"tar -tf a.tar", Allow},
	}
	c := New(Config{Policy: Policy{Mode: ModeBypassPermissions, Rules: rules, Dirs: []string{dir}}})
	checkCommands(t, c, dir, ModeBypassPermissions, cases)
}

// TestHardLinks: a Read or Edit rule covers a file by identity, so another hard link to it
// — made anywhere below the rule's reach or outside it — is covered too, for Read and Edit
// tools and for commands; an edit through a link to a protected file asks in acceptEdits.
func TestHardLinks(t *testing.T) {
	dir := fileFixture(t)
	link := filepath.Join(dir, "src", "innocent.txt")
	if err := os.Link(filepath.Join(dir, "secrets", "token.txt"), link); err != nil {
		t.Skipf("hard links unsupported here: %v", err)
	}
	pLink := filepath.Join(dir, "src", "keep-link.txt")
	if err := os.Link(filepath.Join(dir, "protected", "keep.txt"), pLink); err != nil {
		t.Fatal(err)
	}
	gitLink := filepath.Join(dir, "src", "config-link")
	if err := os.WriteFile(filepath.Join(dir, ".git", "config"), []byte("[core]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, ".git", "config"), gitLink); err != nil {
		t.Fatal(err)
	}
	rules := append(projectRules(t, dir, Deny, "Read(./secrets/**)", "Edit(./protected/**)"), mustRules(t, Allow, "Bash(cat:*)")...)
	for _, mode := range []Mode{ModeDefault, ModeAcceptEdits, ModeBypassPermissions} {
		c := New(Config{Policy: Policy{Mode: mode, Rules: rules, Dirs: []string{dir}}})
		for _, tt := range []struct {
			tool, path string
			want       Behavior
		}{
			{"Read", link, Deny},
			{"Grep", link, Deny},
			{"Edit", pLink, Deny},
			{"Read", filepath.Join(dir, "src", "a.go"), Allow},
		} {
			if d := c.Evaluate(Request{Tool: tt.tool, Paths: []string{tt.path}, Cwd: dir}); d.Behavior != tt.want {
				t.Errorf("%s: %s %s got %s (%s); want %s", mode, tt.tool, tt.path, d.Behavior, d.Reason, tt.want)
			}
		}
		if d := c.Evaluate(Request{Tool: "Bash", Command: "cat src/innocent.txt", Cwd: dir}); d.Behavior != Deny {
			t.Errorf("%s: cat of the link got %s (%s); want deny", mode, d.Behavior, d.Reason)
		}
	}
	c := New(Config{Policy: Policy{Mode: ModeAcceptEdits, Dirs: []string{dir}}})
	if d := c.Evaluate(Request{Tool: "Edit", Paths: []string{gitLink}, Cwd: dir}); d.Behavior != Ask {
		t.Errorf("acceptEdits: an edit through a link to .git/config got %s (%s); want ask", d.Behavior, d.Reason)
	}
	if d := c.Evaluate(Request{Tool: "Edit", Paths: []string{filepath.Join(dir, "src", "a.go")}, Cwd: dir}); d.Behavior != Allow {
		t.Errorf("acceptEdits: an edit of a plain file got %s (%s); want allow", d.Behavior, d.Reason)
	}
}

// TestMountAliases: the same directory mounted twice gives its files two names.
func TestMountAliases(t *testing.T) {
	info := `22 1 8:1 / / rw - ext4 /dev/sda1 rw
30 22 8:1 /home/u/proj /srv/proj rw - ext4 /dev/sda1 rw
31 22 8:1 /home/u /mnt/u\040home rw - ext4 /dev/sda1 rw
32 22 0:5 / /proc rw - proc proc rw
`
	got := aliasesIn(parseMountinfo(info), "/srv/proj/secrets/token.txt")
	want := []string{"/home/u/proj/secrets/token.txt", "/mnt/u home/proj/secrets/token.txt"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("aliases = %q; want %q", got, want)
	}
	if got := aliasesIn(parseMountinfo(info), "/proc/1/status"); len(got) != 0 {
		t.Errorf("aliases of a file mounted once = %q", got)
	}
}

// TestComplexFileCommandsAsk: with file rules in force, lines whose files are too many or too
// costly to resolve are asked about quickly — never a crash, a hang or an allow.
func TestComplexFileCommandsAsk(t *testing.T) {
	dir := fileFixture(t)
	rules := append(projectRules(t, dir, Deny, "Read(./secrets/**)", "Edit(./protected/**)"), mustRules(t, Allow, "Bash(cat:*)", "Bash(echo:*)")...)
	c := New(Config{Policy: Policy{Mode: ModeBypassPermissions, Rules: rules, Dirs: []string{dir}}})
	// Each must finish; those marked true must not be allowed, the others may be (their
	// files resolve to nothing covered).
	for _, tt := range []struct {
		name, cmd string
		asks      bool
	}{
		{"deep glob", "cat /" + strings.Repeat("*/", 12) + "x", true},
		{"many globs", "cat " + strings.Repeat("/*/* ", 600), true},
		{"huge brace", "cat {1..100000}{a,b}", true},
		{"nested braces", "cat " + strings.Repeat("{a,b}", 30), true},
		{"nested bash -c", "bash -c " + strings.Repeat(`"bash -c `, 10) + "cat x.txt", true},
		{"wrapped writers", strings.Repeat("sudo ", 300) + "tee protected/keep.txt", true},
		{"many arguments", "cat " + strings.Repeat("x.txt ", 5000), false},
		{"many cds", strings.Repeat("cd src && cd .. && ", 40) + "cat x.txt", false},
		{"glued options", "cat -" + strings.Repeat("x", 5000), false},
		{"a tree of globs", "grep -r x " + strings.Repeat("*/", 40), false},
		{"many redirections", "cat" + strings.Repeat(" < x.txt", 3000), false},
	} {
		done := make(chan Decision, 1)
		go func() { done <- c.Evaluate(Request{Tool: "Bash", Command: tt.cmd, Cwd: dir}) }()
		if d := waittest.Recv(t, tt.name, done); tt.asks && d.Behavior == Allow {
			t.Errorf("%s: allowed (%s)", tt.name, d.Reason)
		}
	}
}
