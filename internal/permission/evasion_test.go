package permission

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/waittest"
)

// TestParserShapesBashSplits covers the lines keel's parser once read as one command while
// bash runs two: a backslash-newline inside or ending a comment, and a backslash before a CR LF.
// Under an allow rule they must not be allowed; against a deny rule, bash's second command is
// denied, bypassPermissions included.
func TestParserShapesBashSplits(t *testing.T) {
	shapes := []string{
		"git status #\\\n%s",
		"git status # note \\\n%s",
		"git status \\\r\n %s",
		"git status\r\n%s",
		"git status \\\r\n%s",
		"git status #\\\r\n%s",
		"git status\r%s",
	}
	allow := mustRules(t, Allow, "Bash(git status:*)")
	deny := mustRules(t, Deny, "Bash(rm:*)")
	dir := t.TempDir()
	for _, shape := range shapes {
		cmd := sprintf(shape, "touch X")
		for _, mode := range []Mode{ModeDefault, ModeAcceptEdits, ModeDontAsk} {
			c := New(Config{Policy: Policy{Mode: mode, Rules: allow, Dirs: []string{dir}}})
			if d := c.Evaluate(Request{Tool: "Bash", Command: cmd}); d.Behavior == Allow {
				t.Errorf("%s: %q was allowed under Bash(git status:*) (%s)", mode, cmd, d.Reason)
			}
		}
		rm := sprintf(shape, "rm -rf victim")
		for _, mode := range []Mode{ModeDefault, ModeAcceptEdits, ModeBypassPermissions} {
			c := New(Config{Policy: Policy{Mode: mode, Rules: append(append([]Rule{}, allow...), deny...), Dirs: []string{dir}}})
			if d := c.Evaluate(Request{Tool: "Bash", Command: rm}); d.Behavior != Deny {
				t.Errorf("%s: %q got %s (%s); want deny by Bash(rm:*)", mode, rm, d.Behavior, d.Reason)
			}
		}
	}
}

// TestDenyEquivalents checks that deny rules hold against commands that run the same program
// under another spelling, in every mode.
func TestDenyEquivalents(t *testing.T) {
	tests := []struct {
		deny string
		cmds []string
	}{
		{"Bash(rm:*)", []string{
			"/bin/rm -rf victim", "/usr/bin/rm victim", "./rm victim", `\rm victim`, `"rm" victim`, "r''m victim",
			"find . -name victim -exec rm {} +", "find . -exec rm -f {} \\;", "find . -execdir rm {} +", "find . -ok rm {} \\;",
			"command rm victim", "builtin command rm victim", "exec rm victim", "nice -n 5 rm victim", "nohup rm victim",
			"timeout -s KILL 5 rm victim", "stdbuf -oL rm victim", "env -i rm victim", "env -u HOME rm victim",
			"sudo -u root rm victim", "xargs -0 rm < list", "parallel rm ::: a b", "time rm victim", `\time rm victim`,
			"/usr/bin/env rm victim", "busybox rm victim", "env -S 'rm victim'", "bash -c 'rm victim'",
			"git status; /bin/rm victim", "$'rm' victim", "$'\\x72m' victim", "sudo /bin/rm victim",
		}},
		{"Bash(git push:*)", []string{
			"git -C . push", "git -C . push origin main", "git --git-dir=.git push", "git --git-dir .git push",
			"git --work-tree=. push", "git -c user.name=x push", "git --no-pager push", "git -P push",
			"/usr/bin/git push", "git --exec-path=/usr/lib/git-core push", "git --bare push", "git -C a -C b push",
			"git --namespace=x push", "git --literal-pathspecs push", "git --unknown-global push",
		}},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		rules := mustRules(t, Deny, tt.deny)
		for _, mode := range []Mode{ModeDefault, ModeAcceptEdits, ModeDontAsk, ModeBypassPermissions} {
			c := New(Config{Policy: Policy{Mode: mode, Rules: rules, Dirs: []string{dir}}})
			for _, cmd := range tt.cmds {
				if d := c.Evaluate(Request{Tool: "Bash", Command: cmd}); d.Behavior != Deny {
					t.Errorf("%s, deny %s: %q got %s (%s); want deny", mode, tt.deny, cmd, d.Behavior, d.Reason)
				}
			}
		}
	}
}

// TestNetworkRedirections checks that a redirection to bash's /dev/tcp and /dev/udp files is
// network access no Bash rule for the command covers.
func TestNetworkRedirections(t *testing.T) {
	dir := t.TempDir()
	c := New(Config{Policy: Policy{Mode: ModeDefault, Rules: mustRules(t, Allow, "Bash(git status:*)", "Bash(cat:*)"), Dirs: []string{dir}}})
	for _, cmd := range []string{
		"git status < /dev/tcp/127.0.0.1/9",
		"git status </dev/udp/127.0.0.1/9",
		"git status > /dev/tcp/127.0.0.1/9",
		"git status 3</dev/tcp/127.0.0.1/9",
		"git status <> /dev/tcp/127.0.0.1/9",
		"cat 0</dev/tcp/example.com/80",
		"git status <\"/dev/tcp/127.0.0.1/9\"",
	} {
		if d := c.Evaluate(Request{Tool: "Bash", Command: cmd}); d.Behavior == Allow {
			t.Errorf("%q was allowed (%s); it opens a network connection", cmd, d.Reason)
		}
	}
	if d := c.Evaluate(Request{Tool: "Bash", Command: "git status < /dev/null"}); d.Behavior != Allow {
		t.Errorf("git status < /dev/null: got %s (%s); want allow", d.Behavior, d.Reason)
	}
}

// TestHomePaths checks that ~ and $HOME in a tool's path mean the home directory to the check,
// as they do to the tool.
func TestHomePaths(t *testing.T) {
	home := t.TempDir()
	cwd := t.TempDir()
	t.Setenv("HOME", home)
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".ssh", "id_rsa"), []byte("KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	deny := mustRules(t, Deny, "Read(~/.ssh/**)")
	for _, mode := range []Mode{ModeDefault, ModeBypassPermissions} {
		c := New(Config{Policy: Policy{Mode: mode, Rules: deny, Dirs: []string{cwd}}, Home: home})
		for _, p := range []string{"~/.ssh/id_rsa", "$HOME/.ssh/id_rsa", "${HOME}/.ssh/id_rsa", "~/x/../.ssh/id_rsa", home + "/.ssh/id_rsa"} {
			for _, tool := range []string{"Read", "Grep", "Glob"} {
				if d := c.Evaluate(Request{Tool: tool, Paths: []string{p}}); d.Behavior != Deny {
					t.Errorf("%s %s %s: got %s (%s); want deny by Read(~/.ssh/**)", mode, tool, p, d.Behavior, d.Reason)
				}
			}
		}
	}
	c := New(Config{Policy: Policy{Mode: ModeAcceptEdits, Dirs: []string{cwd}}, Home: home})
	for _, p := range []string{"~/x", "$HOME/x", "~"} {
		if d := c.Evaluate(Request{Tool: "Write", Paths: []string{p}}); d.Behavior != Ask {
			t.Errorf("acceptEdits Write %s: got %s (%s); want ask (outside the working directory)", p, d.Behavior, d.Reason)
		}
	}
}

// TestGlobPatternIsItsRoot checks that a Glob whose pattern carries its own base is checked as
// a read of that base.
func TestGlobPatternIsItsRoot(t *testing.T) {
	home := t.TempDir()
	cwd := t.TempDir()
	t.Setenv("HOME", home)
	c := New(Config{Policy: Policy{Mode: ModeDefault, Rules: mustRules(t, Deny, "Read(~/.ssh/**)"), Dirs: []string{cwd}}, Home: home})
	outside := t.TempDir()
	tests := []struct {
		input map[string]string
		want  Behavior
	}{
		{map[string]string{"pattern": outside + "/**/*"}, Ask},
		{map[string]string{"pattern": "../**/*"}, Ask},
		{map[string]string{"pattern": "*", "path": outside}, Ask},
		{map[string]string{"pattern": "~/.ssh/*"}, Deny},
		{map[string]string{"pattern": home + "/.ssh/*"}, Deny},
		{map[string]string{"pattern": "**/*.go"}, Allow},
		{map[string]string{"pattern": "src/**/*.go"}, Allow},
	}
	for _, tt := range tests {
		raw, _ := json.Marshal(tt.input)
		req := RequestFor("Glob", true, raw, cwd)
		if d := c.Evaluate(req); d.Behavior != tt.want {
			t.Errorf("Glob %s: got %s (%s); want %s", raw, d.Behavior, d.Reason, tt.want)
		}
	}
}

func sprintf(shape, cmd string) string { return strings.ReplaceAll(shape, "%s", cmd) }

// TestHugeCommandsAreAsked checks that an overlong or deeply nested line is asked about
// quickly, never a crash or a hang, and that deny rules still hold where it can be read.
func TestHugeCommandsAreAsked(t *testing.T) {
	dir := t.TempDir()
	c := New(Config{Policy: Policy{Mode: ModeDefault, Rules: mustRules(t, Allow, "Bash(git status:*)", "Bash(echo:*)"), Dirs: []string{dir}}})
	for name, cmd := range map[string]string{
		"1 MB argument":       "git status " + strings.Repeat("a", 1<<20),
		"20000 subshells":     strings.Repeat("(", 20000) + "git status" + strings.Repeat(")", 20000),
		"20000 substitutions": "echo " + strings.Repeat("$(", 20000) + "x" + strings.Repeat(")", 20000),
		"20000 braces":        strings.Repeat("{ ", 20000) + "git status;" + strings.Repeat(" }", 20000),
		"20000 quotes":        "echo " + strings.Repeat(`"$(echo `, 20000),
		"100000 commands":     strings.Repeat("git status;", 100000),
		"unclosed heredocs":   strings.Repeat("git status <<E\n", 5000),
		"13000 sudos":         strings.Repeat("sudo ", 13000) + "git status",
		"6000 timeouts":       strings.Repeat("timeout 5 ", 6000) + "git status",
		"4000 git options":    strings.Repeat("git --unknown ", 4000) + "status",
		"10000 evals":         "eval " + strings.Repeat("eval ", 10000),
	} {
		done := make(chan Decision, 1)
		go func() { done <- c.Evaluate(Request{Tool: "Bash", Command: cmd}) }()
		d := waittest.Recv(t, name, done)
		if d.Behavior != Ask {
			t.Errorf("%s: got %s (%s); want ask", name, d.Behavior, d.Reason)
		}
	}
	// Wrappers nested past what keel follows are asked about, not allowed, even in bypass.
	nested := strings.Repeat("timeout 5 ", 3*maxShellDepth) + "rm victim"
	if d := New(Config{Policy: Policy{Mode: ModeBypassPermissions, Rules: mustRules(t, Deny, "Bash(rm:*)"), Dirs: []string{dir}}}).Evaluate(Request{Tool: "Bash", Command: nested}); d.Behavior == Allow {
		t.Errorf("deeply wrapped rm: got %s (%s); want ask or deny", d.Behavior, d.Reason)
	}
	// Below the size limit, deny rules read a long line whole.
	deny := New(Config{Policy: Policy{Mode: ModeBypassPermissions, Rules: mustRules(t, Deny, "Bash(rm:*)"), Dirs: []string{dir}}})
	if d := deny.Evaluate(Request{Tool: "Bash", Command: strings.Repeat("echo ok; ", 2000) + "rm -rf victim"}); d.Behavior != Deny {
		t.Errorf("long line with rm: got %s (%s); want deny", d.Behavior, d.Reason)
	}
}

// TestReadDenySeesArguments checks that a command naming a file a Read deny rule covers is
// denied: by path, through .., globs, ~ and $HOME, after a cd, inside bash -c, through a
// symlink. Other files stay allowed.
func TestReadDenySeesArguments(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	for _, f := range []string{"secrets/token.txt", "src/a.go", "sub/a.go"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, "secrets"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	src := Source{Name: "project", Dir: dir}
	var rules []Rule
	for _, text := range []string{"Read(./secrets/**)", "Read(~/.ssh/**)"} {
		r, err := ParseRule(text, Deny, src)
		if err != nil {
			t.Fatal(err)
		}
		rules = append(rules, r)
	}
	rules = append(rules, mustRules(t, Allow, "Bash(cat:*)", "Bash(grep:*)", "Bash(git status:*)", "Bash(bash -c:*)")...)
	tests := []struct {
		cmd  string
		want Behavior
	}{
		{"cat secrets/token.txt", Deny},
		{"cat ./src/../secrets/token.txt", Deny},
		{"cat s*/tok*", Deny},
		{"cat sec?ets/*", Deny},
		{"cat ~/.ssh/id_rsa", Deny},
		{"cat $HOME/.ssh/id_rsa", Deny},
		{"cat ${HOME}/.ssh/config", Deny},
		{"grep -r x secrets", Deny},
		{"cat --file=secrets/token.txt", Deny},
		{"cd secrets && cat token.txt", Deny},
		{"cd src && cat ../secrets/token.txt", Deny},
		{"bash -c 'cat secrets/token.txt'", Deny},
		{"cat link/token.txt", Deny},
		{"cat < secrets/token.txt", Deny},
		{"cat sec\"\"rets/token.txt", Deny},
		{"cat src/a.go", Allow},
		{"cd sub && cat a.go", Allow},
		{"git status", Allow},
		{"grep -r x src", Allow},
	}
	for _, mode := range []Mode{ModeDefault, ModeBypassPermissions} {
		c := New(Config{Policy: Policy{Mode: mode, Rules: rules, Dirs: []string{dir}}, Home: home})
		for _, tt := range tests {
			if d := c.Evaluate(Request{Tool: "Bash", Command: tt.cmd}); d.Behavior != tt.want {
				t.Errorf("%s: %q got %s (%s); want %s", mode, tt.cmd, d.Behavior, d.Reason, tt.want)
			}
		}
		if d := c.Evaluate(Request{Tool: "Bash", Command: `cd "$D" && cat token.txt`}); d.Behavior == Allow {
			t.Errorf("%s: a relative file after a computed cd was allowed", mode)
		}
	}
}

// TestDenySeesThroughProgramLinks checks that deny rules name programs, not file names: a
// link in the cwd or on PATH to rm is rm.
func TestDenySeesThroughProgramLinks(t *testing.T) {
	dir, bin := t.TempDir(), t.TempDir()
	rm := filepath.Join(bin, "rm")
	if err := os.WriteFile(rm, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, link := range []string{filepath.Join(dir, "x"), filepath.Join(bin, "del")} {
		if err := os.Symlink(rm, link); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	c := New(Config{Policy: Policy{Mode: ModeBypassPermissions, Rules: mustRules(t, Deny, "Bash(rm:*)"), Dirs: []string{dir}}})
	for _, cmd := range []string{"./x victim", "del victim", "nice del victim", dir + "/x victim"} {
		if d := c.Evaluate(Request{Tool: "Bash", Command: cmd, Cwd: dir}); d.Behavior != Deny {
			t.Errorf("%q: got %s (%s); want deny", cmd, d.Behavior, d.Reason)
		}
	}
	if d := c.Evaluate(Request{Tool: "Bash", Command: "ls", Cwd: dir}); d.Behavior != Allow {
		t.Errorf("ls: got %s (%s); want allow", d.Behavior, d.Reason)
	}
}
