package permission

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fsFixture is a project next to an outside directory, with symlinks that
// lead out of the project:
//
//	base/proj/src/a.go, base/proj/docs/x.md, base/proj/src/docs/y.md
//	base/proj/link-out -> base/outside
//	base/proj/src/evil -> base/outside/secret.txt
//	base/proj/dangling -> base/outside/new.txt (does not exist)
//	base/outside/secret.txt
type fsFixture struct {
	base, proj, outside string
}

func newFixture(t *testing.T) fsFixture {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := fsFixture{base: base, proj: filepath.Join(base, "proj"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{"proj/src/docs", "proj/docs", "outside"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, file := range []string{"proj/src/a.go", "proj/docs/x.md", "proj/src/docs/y.md", "outside/secret.txt"} {
		if err := os.WriteFile(filepath.Join(base, file), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"proj/link-out":  f.outside,
		"proj/src/evil":  filepath.Join(f.outside, "secret.txt"),
		"proj/dangling":  filepath.Join(f.outside, "new.txt"),
		"proj/src/uplnk": "../../outside",
	}
	for link, target := range links {
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func TestCheckModesAndPaths(t *testing.T) {
	f := newFixture(t)
	projSrc := Source{Name: "project", Path: ".keel/settings.json", Dir: f.proj}
	rule := func(b Behavior, text string) Rule {
		r, err := ParseRule(text, b, projSrc)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	tests := []struct {
		name  string
		mode  Mode
		rules []Rule
		dirs  []string
		req   Request
		want  Behavior
	}{
		{"read inside", ModeDefault, nil, nil, Request{Tool: "Read", Paths: []string{"src/a.go"}}, Allow},
		{"glob without path", ModeDefault, nil, nil, Request{Tool: "Glob"}, Allow},
		{"read outside", ModeDefault, nil, nil, Request{Tool: "Read", Paths: []string{f.outside + "/secret.txt"}}, Ask},
		{"read through dir symlink", ModeDefault, nil, nil, Request{Tool: "Read", Paths: []string{"link-out/secret.txt"}}, Ask},
		{"read through file symlink", ModeDefault, nil, nil, Request{Tool: "Grep", Paths: []string{"src/evil"}}, Ask},
		{"read dotdot escape", ModeDefault, nil, nil, Request{Tool: "Read", Paths: []string{"src/../../outside/secret.txt"}}, Ask},
		{"read dotdot after symlink", ModeDefault, nil, nil, Request{Tool: "Read", Paths: []string{"src/uplnk/../outside/secret.txt"}}, Ask},
		{"read dotdot after symlink inside", ModeDefault, nil, nil, Request{Tool: "Read", Paths: []string{"src/uplnk/../proj/src/a.go"}}, Allow},
		{"read dotdot inside", ModeDefault, nil, nil, Request{Tool: "Read", Paths: []string{"src/../docs/x.md"}}, Allow},
		{"edit asks in default", ModeDefault, nil, nil, Request{Tool: "Edit", Paths: []string{"src/a.go"}}, Ask},
		{"acceptEdits inside", ModeAcceptEdits, nil, nil, Request{Tool: "Write", Paths: []string{"src/new/deep/f.go"}}, Allow},
		{"acceptEdits through symlink", ModeAcceptEdits, nil, nil, Request{Tool: "Write", Paths: []string{"link-out/new.txt"}}, Ask},
		{"acceptEdits dangling symlink", ModeAcceptEdits, nil, nil, Request{Tool: "Write", Paths: []string{"dangling"}}, Ask},
		{"acceptEdits outside", ModeAcceptEdits, nil, nil, Request{Tool: "Edit", Paths: []string{f.outside + "/x"}}, Ask},
		{"acceptEdits add-dir", ModeAcceptEdits, nil, []string{f.proj, f.outside}, Request{Tool: "Edit", Paths: []string{f.outside + "/x"}}, Allow},
		{"acceptEdits shell asks", ModeAcceptEdits, nil, nil, Request{Tool: "Bash", Command: "make"}, Ask},
		{"allow rule edit", ModeDefault, []Rule{rule(Allow, "Edit(src/**)")}, nil, Request{Tool: "Edit", Paths: []string{"src/a.go"}}, Allow},
		{"allow rule covers read", ModeDefault, []Rule{rule(Allow, "Edit(//"+f.outside[1:]+"/**)")}, nil, Request{Tool: "Read", Paths: []string{f.outside + "/secret.txt"}}, Allow},
		{"allow rule not through symlink", ModeDefault, []Rule{rule(Allow, "Edit(src/**)")}, nil, Request{Tool: "Edit", Paths: []string{"src/evil"}}, Ask},
		{"allow rule every path", ModeDefault, []Rule{rule(Allow, "Edit(src/**)")}, nil, Request{Tool: "MultiEdit", Paths: []string{"src/a.go", "docs/x.md"}}, Ask},
		{"deny any depth via symlink name", ModeBypassPermissions, []Rule{rule(Deny, "Read(secret.txt)")}, nil, Request{Tool: "Read", Paths: []string{"link-out/secret.txt"}}, Deny},
		{"deny absolute via resolved", ModeBypassPermissions, []Rule{rule(Deny, "Read(//"+f.outside[1:]+"/**)")}, nil, Request{Tool: "Read", Paths: []string{"src/evil"}}, Deny},
		{"deny home", ModeDefault, []Rule{rule(Deny, "Read(~/secret.txt)")}, nil, Request{Tool: "Read", Paths: []string{"link-out/secret.txt"}}, Deny},
		{"explicit allow outside", ModeAcceptEdits, []Rule{rule(Allow, "Edit(../outside/**)")}, nil, Request{Tool: "Edit", Paths: []string{f.outside + "/x"}}, Allow},
		{"anchored pattern", ModeDefault, []Rule{rule(Allow, "Edit(/docs/**)")}, nil, Request{Tool: "Edit", Paths: []string{"src/docs/y.md"}}, Ask},
		{"anchored pattern match", ModeDefault, []Rule{rule(Allow, "Edit(/docs/**)")}, nil, Request{Tool: "Edit", Paths: []string{"docs/x.md"}}, Allow},
		{"unanchored pattern", ModeDefault, []Rule{rule(Allow, "Edit(*.md)")}, nil, Request{Tool: "Edit", Paths: []string{"src/docs/y.md"}}, Allow},
		{"directory pattern", ModeDefault, []Rule{rule(Allow, "Edit(./src)")}, nil, Request{Tool: "Edit", Paths: []string{"src/docs/y.md"}}, Allow},
		{"read deny does not block edit", ModeAcceptEdits, []Rule{rule(Deny, "Read(src/**)")}, nil, Request{Tool: "Edit", Paths: []string{"src/a.go"}}, Allow},
		{"write rule is per tool", ModeDefault, []Rule{rule(Allow, "Write(src/**)")}, nil, Request{Tool: "Edit", Paths: []string{"src/a.go"}}, Ask},
		{"ask beats allow", ModeDefault, []Rule{rule(Allow, "Edit"), rule(Ask, "Edit(docs/**)")}, nil, Request{Tool: "Edit", Paths: []string{"docs/x.md"}}, Ask},
		{"deny beats allow", ModeDefault, []Rule{rule(Allow, "Bash(git:*)"), rule(Deny, "Bash(git push:*)")}, nil, Request{Tool: "Bash", Command: "git push"}, Deny},
		{"plan asks edit despite allow rule", ModePlan, []Rule{rule(Allow, "Edit")}, nil, Request{Tool: "Edit", Paths: []string{"src/a.go"}}, Ask},
		{"plan asks shell", ModePlan, []Rule{rule(Allow, "Bash(make:*)")}, nil, Request{Tool: "Bash", Command: "make"}, Ask},
		{"plan read-only shell", ModePlan, []Rule{rule(Allow, "Bash(ls:*)")}, nil, Request{Tool: "Bash", Command: "ls", ReadOnly: true}, Allow},
		{"plan allows read", ModePlan, nil, nil, Request{Tool: "Read", Paths: []string{"src/a.go"}}, Allow},
		{"plan asks to exit", ModePlan, nil, nil, Request{Tool: PlanExitTool}, Ask},
		{"plan asks mcp write", ModePlan, nil, nil, Request{Tool: "mcp__gh__create"}, Ask},
		{"dontAsk denies edit", ModeDontAsk, nil, nil, Request{Tool: "Edit", Paths: []string{"src/a.go"}}, Deny},
		{"dontAsk denies ask rule", ModeDontAsk, []Rule{rule(Ask, "Read")}, nil, Request{Tool: "Read", Paths: []string{"src/a.go"}}, Deny},
		{"dontAsk allows allowed", ModeDontAsk, []Rule{rule(Allow, "Bash(go test:*)")}, nil, Request{Tool: "Bash", Command: "go test ./..."}, Allow},
		{"dontAsk reads inside", ModeDontAsk, nil, nil, Request{Tool: "Read", Paths: []string{"src/a.go"}}, Allow},
		{"bypass outside edit", ModeBypassPermissions, nil, nil, Request{Tool: "Edit", Paths: []string{f.outside + "/x"}}, Allow},
		{"bypass keeps ask rules", ModeBypassPermissions, []Rule{rule(Ask, "Bash(git push:*)")}, nil, Request{Tool: "Bash", Command: "git push"}, Ask},
		{"bypass keeps deny", ModeBypassPermissions, []Rule{rule(Deny, "Edit(docs/**)")}, nil, Request{Tool: "Write", Paths: []string{"docs/x.md"}}, Deny},
		{"bubble behaves as default", ModeBubble, nil, nil, Request{Tool: "Edit", Paths: []string{"src/a.go"}}, Ask},
		{"mcp server rule", ModeDefault, []Rule{rule(Allow, "mcp__github")}, nil, Request{Tool: "mcp__github__create_issue"}, Allow},
		{"mcp server rule other server", ModeDefault, []Rule{rule(Allow, "mcp__github")}, nil, Request{Tool: "mcp__githubx__create_issue"}, Ask},
		{"mcp wildcard", ModeDefault, []Rule{rule(Allow, "mcp__github__*")}, nil, Request{Tool: "mcp__github__list"}, Allow},
		{"mcp exact", ModeDefault, []Rule{rule(Allow, "mcp__github__list")}, nil, Request{Tool: "mcp__github__lister"}, Ask},
		{"mcp deny tool in allowed server", ModeDefault, []Rule{rule(Allow, "mcp__github"), rule(Deny, "mcp__github__delete_repo")}, nil, Request{Tool: "mcp__github__delete_repo"}, Deny},
		{"mcp read-only", ModeDefault, nil, nil, Request{Tool: "mcp__gh__list", ReadOnly: true}, Allow},
		{"webfetch domain", ModeDefault, []Rule{rule(Allow, "WebFetch(domain:example.com)")}, nil, Request{Tool: "WebFetch", URL: "https://Example.com/x"}, Allow},
		{"webfetch other domain", ModeDefault, []Rule{rule(Allow, "WebFetch(domain:example.com)")}, nil, Request{Tool: "WebFetch", URL: "https://example.com.evil.net/"}, Ask},
		{"webfetch subdomain exact", ModeDefault, []Rule{rule(Allow, "WebFetch(domain:example.com)")}, nil, Request{Tool: "WebFetch", URL: "https://sub.example.com/"}, Ask},
		{"webfetch wildcard", ModeDefault, []Rule{rule(Allow, "WebFetch(domain:*.example.com)")}, nil, Request{Tool: "WebFetch", URL: "https://sub.example.com/"}, Allow},
		{"websearch asks", ModeDefault, nil, nil, Request{Tool: "WebSearch", ReadOnly: true}, Ask},
		{"websearch allowed by rule", ModeDefault, []Rule{rule(Allow, "WebSearch")}, nil, Request{Tool: "WebSearch", ReadOnly: true}, Allow},
		{"websearch in plan mode", ModePlan, nil, nil, Request{Tool: "WebSearch", ReadOnly: true}, Ask},
		{"websearch dontAsk", ModeDontAsk, nil, nil, Request{Tool: "WebSearch", ReadOnly: true}, Deny},
		{"agent deny by type", ModeDefault, []Rule{rule(Deny, "Task(Explore)")}, nil, Request{Tool: "Agent", Argument: "Explore"}, Deny},
		{"agent other type", ModeDefault, []Rule{rule(Deny, "Task(Explore)")}, nil, Request{Tool: "Task", Argument: "general-purpose"}, Allow},
		{"todo allowed", ModeDefault, nil, nil, Request{Tool: "TodoWrite"}, Allow},
		{"cd inside", ModeDefault, []Rule{rule(Allow, "Bash(go test:*)")}, nil, Request{Tool: "Bash", Command: "cd src && go test ./..."}, Allow},
		{"cd through symlink out", ModeDefault, []Rule{rule(Allow, "Bash(go test:*)")}, nil, Request{Tool: "Bash", Command: "cd link-out && go test ./..."}, Ask},
		{"cd chain inside", ModeDefault, []Rule{rule(Allow, "Bash(go test:*)")}, nil, Request{Tool: "Bash", Command: "cd src && cd docs && go test ./..."}, Allow},
		{"cd chain through symlink out", ModeDefault, []Rule{rule(Allow, "Bash(go test:*)")}, nil, Request{Tool: "Bash", Command: "cd src && cd uplnk && go test ./..."}, Ask},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dirs := tt.dirs
			if dirs == nil {
				dirs = []string{f.proj}
			}
			c := New(Config{Policy: Policy{Mode: tt.mode, Rules: tt.rules, Dirs: dirs}, Home: f.outside})
			if d := c.Evaluate(tt.req); d.Behavior != tt.want {
				t.Errorf("got %s (%s); want %s", d.Behavior, d.Reason, tt.want)
			}
		})
	}
}

func TestIntersect(t *testing.T) {
	f := newFixture(t)
	src := Source{Name: "test", Dir: f.proj}
	rules := func(b Behavior, texts ...string) []Rule {
		var out []Rule
		for _, s := range texts {
			r, err := ParseRule(s, b, src)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	dirs := []string{f.proj}
	edit := Request{Tool: "Edit", Paths: []string{"src/a.go"}}
	goTest := Request{Tool: "Bash", Command: "go test ./..."}
	rm := Request{Tool: "Bash", Command: "rm x"}
	outsideRead := Request{Tool: "Read", Paths: []string{f.outside + "/secret.txt"}}
	tests := []struct {
		name          string
		parent, child Policy
		req           Request
		want          Behavior
	}{
		{"child bypass capped", Policy{Mode: ModeDefault, Dirs: dirs}, Policy{Mode: ModeBypassPermissions}, edit, Ask},
		{"child bypass keeps parent allow", Policy{Mode: ModeDefault, Rules: rules(Allow, "Bash(go test:*)"), Dirs: dirs}, Policy{Mode: ModeBypassPermissions}, goTest, Allow},
		{"child bypass capped shell", Policy{Mode: ModeDefault, Rules: rules(Allow, "Bash(go test:*)"), Dirs: dirs}, Policy{Mode: ModeBypassPermissions}, rm, Ask},
		{"child allow rule capped", Policy{Mode: ModeDefault, Dirs: dirs}, Policy{Mode: ModeDefault, Rules: rules(Allow, "Bash")}, rm, Ask},
		{"restrictive child stays", Policy{Mode: ModeBypassPermissions, Dirs: dirs}, Policy{Mode: ModePlan}, edit, Ask},
		{"restrictive child dontAsk", Policy{Mode: ModeDefault, Dirs: dirs}, Policy{Mode: ModeDontAsk}, rm, Deny},
		{"child deny stays", Policy{Mode: ModeBypassPermissions, Dirs: dirs}, Policy{Mode: ModeBypassPermissions, Rules: rules(Deny, "Bash(rm:*)")}, rm, Deny},
		{"parent deny wins", Policy{Mode: ModeDefault, Rules: rules(Deny, "Bash(rm:*)"), Dirs: dirs}, Policy{Mode: ModeDefault, Rules: rules(Allow, "Bash")}, rm, Deny},
		{"bubble takes parent mode", Policy{Mode: ModeAcceptEdits, Dirs: dirs}, Policy{Mode: ModeBubble}, edit, Allow},
		{"bubble under bypass", Policy{Mode: ModeBypassPermissions, Dirs: dirs}, Policy{Mode: ModeBubble}, rm, Allow},
		{"plan parent dontAsk child", Policy{Mode: ModePlan, Dirs: dirs}, Policy{Mode: ModeDontAsk, Rules: rules(Allow, "Bash(rm:*)")}, rm, Deny},
		{"plan parent dontAsk child read outside", Policy{Mode: ModePlan, Dirs: dirs}, Policy{Mode: ModeDontAsk}, outsideRead, Deny},
		{"child dirs within parent", Policy{Mode: ModeAcceptEdits, Dirs: dirs}, Policy{Mode: ModeAcceptEdits, Dirs: []string{f.proj, f.outside}}, Request{Tool: "Edit", Paths: []string{f.outside + "/x"}}, Ask},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(Config{Policy: Intersect(tt.parent, tt.child)})
			if d := c.Evaluate(tt.req); d.Behavior != tt.want {
				t.Errorf("got %s (%s); want %s", d.Behavior, d.Reason, tt.want)
			}
		})
	}

	// Ceilings nest: a grandchild stays under the grandparent.
	gp := Policy{Mode: ModeDefault, Dirs: dirs, Rules: rules(Deny, "Bash(rm:*)")}
	child := Intersect(gp, Policy{Mode: ModeBypassPermissions})
	grand := Intersect(child, Policy{Mode: ModeBypassPermissions, Rules: rules(Allow, "Bash")})
	if d := New(Config{Policy: grand}).Evaluate(rm); d.Behavior != Deny {
		t.Errorf("grandchild rm: got %s (%s); want deny", d.Behavior, d.Reason)
	}
	if d := New(Config{Policy: grand}).Evaluate(edit); d.Behavior != Ask {
		t.Errorf("grandchild edit: got %s (%s); want ask", d.Behavior, d.Reason)
	}
}

func TestHeadlessNamesRule(t *testing.T) {
	dir := t.TempDir()
	c := New(Config{Policy: Policy{Mode: ModeDefault, Dirs: []string{dir}}})
	d := c.Check(t.Context(), Request{Tool: "Bash", Command: "go test ./... && go vet ./..."})
	if d.Behavior != Deny {
		t.Fatalf("got %s; want deny", d.Behavior)
	}
	for _, want := range []string{`add "Bash(go test:*)" and "Bash(go vet:*)" to permissions.allow`, "headless"} {
		if !strings.Contains(d.Reason, want) {
			t.Errorf("reason %q does not contain %q", d.Reason, want)
		}
	}
	d = c.Check(t.Context(), Request{Tool: "Write", Paths: []string{"/elsewhere/x.txt"}})
	if !strings.Contains(d.Reason, `"Edit(//elsewhere/x.txt)"`) {
		t.Errorf("reason %q does not name Edit(//elsewhere/x.txt)", d.Reason)
	}
	d = c.Check(t.Context(), Request{Tool: "Write", Paths: []string{"src/[id].ts"}})
	if !strings.Contains(d.Reason, `"Edit(./src/\\[id\\].ts)"`) {
		t.Errorf("reason %q does not name the escaped rule", d.Reason)
	}
	if got := c.Denials().Counts(); got != (DenialCounts{Consecutive: 3, Total: 3}) {
		t.Errorf("denials = %+v; want 3 and 3", got)
	}
	c.Check(t.Context(), Request{Tool: "Read", Paths: []string{"a"}})
	if got := c.Denials().Counts(); got != (DenialCounts{Consecutive: 0, Total: 3}) {
		t.Errorf("denials after allow = %+v; want 0 and 3", got)
	}
}

func TestAskerAnswers(t *testing.T) {
	dir := t.TempDir()
	var asked atomic.Int32
	var gotReq AskRequest
	asker := AskerFunc(func(ctx context.Context, req AskRequest) (Answer, error) {
		asked.Add(1)
		gotReq = req
		if req.Request.Command == "make" {
			return DenyAnswer("not now"), nil
		}
		return AllowAlways(req.Suggestions...), nil
	})
	c := New(Config{Policy: Policy{Mode: ModeDefault, Dirs: []string{dir}}, Asker: asker, Agent: AgentInfo{Name: "main"}})
	goTest := Request{Tool: "Bash", Command: "go test ./..."}
	if d := c.Check(t.Context(), goTest); d.Behavior != Allow || !d.Asked {
		t.Fatalf("first go test: %+v", d)
	}
	if diff := cmp.Diff([]string{"Bash(go test:*)"}, ruleStrings(gotReq.Suggestions)); diff != "" {
		t.Errorf("suggestions mismatch (-want +got):\n%s", diff)
	}
	if d := c.Check(t.Context(), Request{Tool: "Bash", Command: "go test -run X ./..."}); d.Behavior != Allow || d.Asked {
		t.Errorf("second go test should be allowed by the added rule without asking: %+v", d)
	}
	if d := c.Check(t.Context(), Request{Tool: "Bash", Command: "make"}); d.Behavior != Deny || d.Reason != "not now" {
		t.Errorf("make: %+v", d)
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("asked %d times; want 2", n)
	}

	// A child in bubble mode asks the parent's asker, naming itself.
	child := c.Child(Policy{Mode: ModeBubble}, AgentInfo{Name: "worker", Color: "blue"}, nil)
	child.Check(t.Context(), Request{Tool: "Edit", Paths: []string{"x"}})
	if gotReq.Agent != (AgentInfo{Name: "worker", Color: "blue"}) {
		t.Errorf("child ask came from %+v", gotReq.Agent)
	}
	if got := child.Denials().Counts(); got.Total != 0 {
		t.Errorf("child denials start at %+v; want fresh", got)
	}

	failing := New(Config{Policy: Policy{Dirs: []string{dir}}, Asker: AskerFunc(func(ctx context.Context, req AskRequest) (Answer, error) {
		return Answer{}, errors.New("ui closed")
	})})
	if d := failing.Check(t.Context(), goTest); d.Behavior != Deny || !strings.Contains(d.Reason, "ui closed") {
		t.Errorf("failing asker: %+v", d)
	}
}

func ruleStrings(rules []Rule) []string {
	var out []string
	for _, r := range rules {
		out = append(out, r.String())
	}
	return out
}

// TestCdTrackerLosesTrack checks that after a cd keel cannot follow no later cd is exempt.
func TestCdTrackerLosesTrack(t *testing.T) {
	f := newFixture(t)
	for _, line := range []string{`cd "$D" && cd src`, "cd - && cd src", "pushd /tmp && cd src", "cd && cd src"} {
		a := analyzeShell(line)
		tr := newCdTracker(f.proj, f.proj, []string{f.proj})
		var exempt []bool
		for _, c := range a.cmds {
			exempt = append(exempt, tr.inside(c))
		}
		if exempt[len(exempt)-1] {
			t.Errorf("%q: the last cd was exempt after one keel cannot follow", line)
		}
	}
}

// TestAskerDeniesAlways: "reject always" denies the call and, through the suggested rules
// turned into deny rules, the calls like it, without asking again.
func TestAskerDeniesAlways(t *testing.T) {
	var asked atomic.Int32
	c := New(Config{Policy: Policy{Mode: ModeDefault, Dirs: []string{t.TempDir()}}, Asker: AskerFunc(func(ctx context.Context, req AskRequest) (Answer, error) {
		asked.Add(1)
		return DenyAlways("never", req.Suggestions...), nil
	})})
	if d := c.Check(t.Context(), Request{Tool: "Bash", Command: "go test ./..."}); d.Behavior != Deny || d.Reason != "never" {
		t.Fatalf("first go test: %+v", d)
	}
	if d := c.Check(t.Context(), Request{Tool: "Bash", Command: "go test -run X ./..."}); d.Behavior != Deny || d.Asked {
		t.Errorf("second go test should be denied by the added rule without asking: %+v", d)
	}
	if d := c.Check(t.Context(), Request{Tool: "Bash", Command: "make"}); !d.Asked {
		t.Errorf("make matched the deny rule of another command: %+v", d)
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("asked %d times; want 2", n)
	}
}

// TestSuggestedShellRules: the rule offered is one a person would write: a command and its
// subcommand, never a command and its first argument.
func TestSuggestedShellRules(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct{ command, want string }{
		{"seq 1 10", "Bash(seq:*)"},
		{"go test ./...", "Bash(go test:*)"},
		{"git commit -m fix", "Bash(git commit:*)"},
		{"npm run build", "Bash(npm run:*)"},
		{"cat notes.txt", "Bash(cat:*)"},
		{"ls -la", "Bash(ls:*)"},
		{"head -5 x", "Bash(head:*)"},
	} {
		var got []Rule
		asker := AskerFunc(func(ctx context.Context, req AskRequest) (Answer, error) {
			got = req.Suggestions
			return DenyAnswer("no"), nil
		})
		c := New(Config{Policy: Policy{Mode: ModeDefault, Dirs: []string{dir}}, Asker: asker})
		c.Check(t.Context(), Request{Tool: "Bash", Command: tt.command})
		if diff := cmp.Diff([]string{tt.want}, ruleStrings(got)); diff != "" {
			t.Errorf("%s: suggestions mismatch (-want +got):\n%s", tt.command, diff)
		}
	}
}
