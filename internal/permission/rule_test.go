package permission

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseRule(t *testing.T) {
	tests := []struct {
		in, tool, spec string
	}{
		{"Bash", "Bash", ""},
		{"Bash(*)", "Bash", ""},
		{"Bash(npm run test:*)", "Bash", "npm run test:*"},
		{"Bash(git status)", "Bash", "git status"},
		{"Bash(npm *)", "Bash", "npm *"},
		{"Read(./src/**)", "Read", "./src/**"},
		{"Edit(docs/**)", "Edit", "docs/**"},
		{"Read(~/x/**)", "Read", "~/x/**"},
		{"Read(//abs/path)", "Read", "//abs/path"},
		{"WebFetch(domain:example.com)", "WebFetch", "domain:example.com"},
		{"mcp__github", "mcp__github", ""},
		{"mcp__github__*", "mcp__github__*", ""},
		{"mcp__github__create_issue", "mcp__github__create_issue", ""},
		{"Task(Explore)", "Agent", "Explore"},
		{"  Write  ", "Write", ""},
		{"MyTool(key)", "MyTool", "key"},
	}
	for _, tt := range tests {
		r, err := ParseRule(tt.in, Allow, Source{Name: "test"})
		if err != nil {
			t.Errorf("ParseRule(%q): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff([]string{tt.tool, tt.spec}, []string{r.Tool, r.Specifier}); diff != "" {
			t.Errorf("ParseRule(%q) mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestParseRuleErrors(t *testing.T) {
	src := Source{Name: "project", Path: ".keel/settings.json"}
	tests := []struct{ in, want string }{
		{"", "empty rule"},
		{"Bash(npm", "missing closing parenthesis"},
		{"Bash)", "closing parenthesis without an opening one"},
		{"Bash()", "empty specifier"},
		{"Bash(npm:* run)", `":*" is only allowed at the end`},
		{"Bash(n*m:*)", "cannot hold another"},
		{"Bash(git status && rm x)", "one command of plain words"},
		{"Bash(git $(x))", "one command of plain words"},
		{"WebFetch(example.com)", "domain:HOST"},
		{"WebFetch(domain:a/b)", "must be a host name"},
		{"mcp__x(y)", "MCP rules take no specifier"},
		{"mcp__x__y*", "MCP rules are"},
		{"1Bash", "must start with a letter"},
		{"Read([)", "not a valid glob"},
	}
	for _, tt := range tests {
		_, err := ParseRule(tt.in, Deny, src)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseRule(%q) = %v; want an error containing %q", tt.in, err, tt.want)
			continue
		}
		if tt.in != "" && !strings.Contains(err.Error(), `project settings .keel/settings.json: permission rule "`+tt.in+`"`) {
			t.Errorf("ParseRule(%q) error %q does not name the source and rule", tt.in, err)
		}
	}
}

func TestParseToolList(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"Bash(git log:*),Edit", []string{"Bash(git log:*)", "Edit"}},
		{"Bash(npm run test:*) Read(src/**)", []string{"Bash(npm run test:*)", "Read(src/**)"}},
		{" Read , Grep,,Glob ", []string{"Read", "Grep", "Glob"}},
		{"Bash(git commit -m \"a, b\")", []string{`Bash(git commit -m "a, b")`}},
		{"", nil},
	}
	for _, tt := range tests {
		rules, err := ParseToolList(tt.in, Allow, Source{Name: "cli"})
		if err != nil {
			t.Errorf("ParseToolList(%q): %v", tt.in, err)
			continue
		}
		var got []string
		for _, r := range rules {
			got = append(got, r.String())
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParseToolList(%q) mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
	if _, err := ParseToolList("Bash(git log:*", Allow, Source{Name: "cli"}); err == nil {
		t.Error("unbalanced list parsed without error")
	}
}

func TestParseRulesKeepsGoodOnes(t *testing.T) {
	rules, errs := ParseRules([]string{"Bash(ls:*)", "Bash(", "Read"}, Allow, Source{Name: "user"})
	if len(rules) != 2 || len(errs) != 1 {
		t.Fatalf("got %d rules and %v; want 2 rules and 1 error", len(rules), errs)
	}
}

func TestParseMode(t *testing.T) {
	for _, m := range Modes {
		if got, err := ParseMode(string(m)); err != nil || got != m {
			t.Errorf("ParseMode(%q) = %q, %v", m, got, err)
		}
	}
	_, err := ParseMode("yolo")
	want := `permission mode "yolo" is not one of default, acceptEdits, plan, dontAsk, bypassPermissions, auto, bubble`
	if err == nil || err.Error() != want {
		t.Errorf("ParseMode(yolo) error = %v; want %q", err, want)
	}
}

func TestBashPatternMatch(t *testing.T) {
	tests := []struct {
		rule, cmd string
		want      bool
	}{
		{"npm run test:*", "npm run test", true},
		{"npm run test:*", "npm run test --watch", true},
		{"npm run test:*", "npm run testx", false},
		{"npm run test:*", "npm run", false},
		{"ls:*", "lsof", false},
		{"git status", "git status", true},
		{"git status", "git  status", true},
		{"git status", "git status -s", false},
		{"git status", `git 'status'`, true},
		{"npm *", "npm", true},
		{"npm *", "npm install x", true},
		{"npm *", "npmx install", false},
		{"git * main", "git push origin main", true},
		{"git * main", "git push origin dev", false},
		{"* install", "npm install", true},
		{"* install", "bash -c x install", false},
		{"* install", "sudo rm install", false},
		{`echo \*`, "echo '*'", true},
		{`echo \*`, "echo hi", false},
		{"git commit -m *", `git commit -m "a b"`, true},
	}
	for _, tt := range tests {
		p, err := parseBashPattern(tt.rule)
		if err != nil {
			t.Fatalf("parse %q: %v", tt.rule, err)
		}
		a := analyzeShell(tt.cmd)
		if len(a.cmds) != 1 {
			t.Fatalf("%q parsed into %d commands", tt.cmd, len(a.cmds))
		}
		if got := p.match(a.cmds[0]); got != tt.want {
			t.Errorf("Bash(%s) on %q = %v; want %v", tt.rule, tt.cmd, got, tt.want)
		}
	}
}
