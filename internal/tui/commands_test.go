package tui

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/keel-dev/keel/internal/provider/scripted"
)

// runCommand types a line in the input, presses enter and processes what it starts until the
// hint and pending work are gone.
func runCommand(d *driver, line string) {
	d.t.Helper()
	typeKeys(d.m, line)
	_, cmd := d.m.Update(press("enter"))
	d.run(cmd)
}

// lastNotice is the text of the newest notice or error.
func lastNotice(m *Model) string {
	for i := len(m.items) - 1; i >= 0; i-- {
		if k := m.items[i].kind; k == kindNotice || k == kindError {
			return m.items[i].text
		}
	}
	return ""
}

// untilNotice processes messages until a notice or error containing want is shown.
func untilNotice(d *driver, want string) string {
	d.t.Helper()
	d.until(func() bool { return strings.Contains(lastNotice(d.m), want) })
	return lastNotice(d.m)
}

func newCommandModel(t *testing.T, rules ...scripted.Rule) (*driver, string) {
	t.Helper()
	sess, dir := newSession(t, nil, rules...)
	m := New(Config{Backend: sess, NoColor: true, Version: "test", PrefsPath: filepath.Join(t.TempDir(), "tui.json"), ReportDir: t.TempDir()})
	t.Cleanup(m.Close)
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	return newDriver(t, m), dir
}

func TestModelCommand(t *testing.T) {
	d, _ := newCommandModel(t)
	runCommand(d, "/model gpt-99-turbo")
	if got := untilNotice(d, "unknown model"); !strings.Contains(got, `unknown model "gpt-99-turbo"`) {
		t.Errorf("an unknown model: %q", got)
	}
	if d.m.b.Model() != "claude-test" {
		t.Errorf("the model changed to %q", d.m.b.Model())
	}
	runCommand(d, "/model")
	if d.m.picker == nil || !strings.Contains(frame(d.m), "haiku") {
		t.Fatalf("no model picker:\n%s", frame(d.m))
	}
	typeKeys(d.m, "haiku")
	_, cmd := d.m.Update(press("enter"))
	d.run(cmd)
	untilNotice(d, "model set to")
	if !strings.Contains(d.m.b.Model(), "haiku") {
		t.Errorf("model %q after picking haiku", d.m.b.Model())
	}
}

func TestPermissionsCommand(t *testing.T) {
	d, dir := newCommandModel(t)
	runCommand(d, "/permissions")
	if d.m.picker == nil {
		t.Fatal("no permissions picker")
	}
	d.m.Update(press("down"))
	d.m.Update(press("down")) // + add a deny rule
	d.m.Update(press("enter"))
	if !strings.Contains(frame(d.m), "New deny rule") {
		t.Fatalf("no question for the rule:\n%s", frame(d.m))
	}
	runCommand(d, "Bash(rm:*)")
	untilNotice(d, "added the deny rule Bash(rm:*)")
	b, _ := os.ReadFile(filepath.Join(dir, ".keel", "settings.local.json"))
	if !strings.Contains(string(b), `"Bash(rm:*)"`) {
		t.Errorf("the rule is not kept in the local settings: %s", b)
	}
	runCommand(d, "/permissions")
	if got := frame(d.m); !strings.Contains(got, "deny   Bash(rm:*)") {
		t.Fatalf("the rule is not listed:\n%s", got)
	}
	typeKeys(d.m, "rm:")
	d.m.Update(press("enter"))
	if !strings.Contains(frame(d.m), "Remove the deny rule Bash(rm:*)?") {
		t.Fatalf("no confirmation:\n%s", frame(d.m))
	}
	d.m.Update(press("up"))
	_, cmd := d.m.Update(press("enter"))
	d.run(cmd)
	untilNotice(d, "removed the deny rule")
	b, _ = os.ReadFile(filepath.Join(dir, ".keel", "settings.local.json"))
	if strings.Contains(string(b), "rm:") {
		t.Errorf("the rule is still in the local settings: %s", b)
	}
}

func TestInspectCommands(t *testing.T) {
	d, _ := newCommandModel(t)
	for _, tt := range []struct{ line, want string }{
		{"/status", "session"},
		{"/context", "System prompt"},
		{"/hooks", "No hooks configured"},
		{"/todos", "No todos yet"},
		{"/bashes", "No background shells"},
		{"/skills", "Skills (run one with /NAME)"},
	} {
		runCommand(d, tt.line)
		if got := untilNotice(d, tt.want); got == "" {
			t.Errorf("%s said nothing", tt.line)
		}
	}
	runCommand(d, "/doctor")
	got := untilNotice(d, "Doctor")
	for _, want := range []string{"✓ model API: answers and accepts the key", "✓ keel: test", "✓ go: go1."} {
		if !strings.Contains(got, want) {
			t.Errorf("/doctor lacks %q:\n%s", want, got)
		}
	}
}

func TestExportAndBug(t *testing.T) {
	d, dir := newCommandModel(t, scripted.Rule{Reply: []scripted.Block{scripted.Text("The key is sk-ant-api03-abcdefghijklmnop.")}})
	_, cmd := d.m.Update(nil)
	d.run(d.m.submit("what is my key"))
	d.run(cmd)
	d.until(func() bool { return !d.m.working && len(d.m.prompts) == 1 })
	runCommand(d, "/export notes.md")
	untilNotice(d, "wrote the conversation to")
	b, err := os.ReadFile(filepath.Join(dir, "notes.md"))
	if err != nil || !strings.Contains(string(b), "what is my key") {
		t.Errorf("export (%v): %s", err, b)
	}
	runCommand(d, "/bug the answer leaked a key")
	untilNotice(d, "wrote the bug report to")
	reports, _ := filepath.Glob(filepath.Join(d.m.cfg.ReportDir, "keel-bug-*.md"))
	if len(reports) != 1 {
		t.Fatalf("%d reports", len(reports))
	}
	b, _ = os.ReadFile(reports[0])
	for _, want := range []string{"the answer leaked a key", "model claude-test", "what is my key", "[redacted]"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the report lacks %q:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), "abcdefghijklmnop") {
		t.Errorf("the report holds the key:\n%s", b)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"ANTHROPIC_API_KEY=sk-ant-api03-xyzxyzxyzxyz":        "ANTHROPIC_API_KEY=[redacted]",
		`"apiKey": "abc123secret"`:                           `"apiKey": "[redacted]"`,
		"Authorization: Bearer eyJhbGciOi.payload.sig":       "Authorization: Bearer [redacted]",
		"https://user:hunter2@example.com/x":                 "https://user:[redacted]@example.com/x",
		"a token ghp_abcdefghijklmnopqrstuvwxyz0123 in text": "a token [redacted] in text",
		"nothing secret here":                                "nothing secret here",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestThemeAndVim(t *testing.T) {
	d, _ := newCommandModel(t)
	runCommand(d, "/theme light")
	if d.m.st.theme != "light" || d.m.md.style != "light" {
		t.Errorf("theme %q, markdown %q after /theme light", d.m.st.theme, d.m.md.style)
	}
	runCommand(d, "/vim")
	typeKeys(d.m, "hello world")
	d.m.Update(press("esc"))
	if !strings.Contains(frame(d.m), "NORMAL") {
		t.Fatalf("esc did not switch to normal mode:\n%s", frame(d.m))
	}
	typeKeys(d.m, "0x$")
	typeKeys(d.m, "x")
	typeKeys(d.m, "A!")
	if got := d.m.input.Value(); got != "ello worl!" {
		t.Errorf("after 0 x $ x A! the input is %q", got)
	}
	d.m.Update(press("esc"))
	typeKeys(d.m, "dd")
	if got := d.m.input.Value(); got != "" {
		t.Errorf("dd left %q", got)
	}
	// The choices are kept for the next run.
	next := New(Config{Backend: d.m.b, NoColor: true, PrefsPath: d.m.cfg.PrefsPath})
	defer next.Close()
	if next.st.theme != "light" || !next.vim.on {
		t.Errorf("the next run has theme %q, vim %v", next.st.theme, next.vim.on)
	}
}

// TestStatusLine: the status line command gets Claude Code's JSON on stdin and its first
// line is shown under the input.
func TestStatusLine(t *testing.T) {
	d, dir := newCommandModel(t)
	in := filepath.Join(dir, "status-input.json")
	runCommand(d, "/statusline cat > "+in+"; echo 'ctx ok'; echo second line")
	d.until(func() bool { return strings.Contains(d.m.statusLineView(), "ctx ok") })
	if got := d.m.statusLineView(); got != "ctx ok" || !strings.Contains(frame(d.m), "\nctx ok\n") {
		t.Errorf("status line %q, want only its first line, under the input:\n%s", got, frame(d.m))
	}
	b, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		SessionID string `json:"session_id"`
		Cwd       string `json:"cwd"`
		Model     struct {
			ID string `json:"id"`
		} `json:"model"`
		OutputStyle struct {
			Name string `json:"name"`
		} `json:"output_style"`
		Cost struct {
			USD *float64 `json:"total_cost_usd"`
		} `json:"cost"`
		Context struct {
			Size int64 `json:"context_window_size"`
		} `json:"context_window"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.SessionID != d.m.b.ID() || got.Cwd == "" || got.Model.ID != "claude-test" || got.OutputStyle.Name != "default" || got.Cost.USD == nil || got.Context.Size == 0 {
		t.Errorf("status line input %s", b)
	}
	runCommand(d, "/statusline off")
	if d.m.sl.command(d.m.b.(StatusLiner)) != "" || d.m.statusLineView() != "" {
		t.Error("the status line is still on")
	}
}

func TestOutputStyleFromConfig(t *testing.T) {
	d, dir := newCommandModel(t)
	runCommand(d, "/config")
	if got := frame(d.m); !strings.Contains(got, "Output style      default") {
		t.Fatalf("no output style in /config:\n%s", got)
	}
	d.m.Update(press("enter"))
	d.m.Update(press("down")) // Explanatory
	_, cmd := d.m.Update(press("enter"))
	d.run(cmd)
	untilNotice(d, "output style Explanatory")
	runCommand(d, "/output-style shakespeare")
	untilNotice(d, `no output style "shakespeare"`)
	b, _ := os.ReadFile(filepath.Join(dir, ".keel", "settings.local.json"))
	if !strings.Contains(string(b), `"outputStyle": "Explanatory"`) {
		t.Errorf("not kept: %s", b)
	}
}

func TestPlanCopyAndReload(t *testing.T) {
	d, dir := newCommandModel(t, scripted.Rule{Reply: []scripted.Block{scripted.Text("The answer is **42**.")}})
	runCommand(d, "/plan")
	if d.m.b.PermissionMode() != "plan" {
		t.Errorf("mode %q after /plan", d.m.b.PermissionMode())
	}
	typeKeys(d.m, "/copy")
	if _, cmd := d.m.Update(press("enter")); cmd != nil {
		t.Error("/copy with no answer yet copied something")
	}
	d.run(d.m.submit("what is it"))
	d.until(func() bool { return !d.m.working && len(d.m.prompts) == 1 })
	typeKeys(d.m, "/copy")
	_, cmd := d.m.Update(press("enter"))
	if cmd == nil || fmt.Sprint(cmd()) != "The answer is **42**." {
		t.Errorf("/copy did not put the answer on the clipboard")
	}
	if err := os.MkdirAll(filepath.Join(dir, ".keel", "skills", "greet"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".keel", "skills", "greet", "SKILL.md"), []byte("---\nname: greet\ndescription: Say hello nicely\n---\nSay hello.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runCommand(d, "/skills reload")
	untilNotice(d, "read the skills again")
	runCommand(d, "/skills")
	if got := untilNotice(d, "Skills"); !strings.Contains(got, "/greet") {
		t.Errorf("the new skill is not listed after /skills reload:\n%s", got)
	}
}

// TestStatusLineNotFromTheWorkspace: a status line a package runner starts (`npx -y PKG`)
// is not run where the workspace holds a copy of PKG — put there by the repository or by a
// sandboxed command, it would run outside the sandbox after every turn — and says why.
func TestStatusLineNotFromTheWorkspace(t *testing.T) {
	d, dir := newCommandModel(t)
	marker := filepath.Join(t.TempDir(), "ran")
	pkg := filepath.Join(dir, "node_modules", "ccstatus-x")
	if err := os.MkdirAll(filepath.Join(pkg, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name":"ccstatus-x","bin":{"ccstatus-x":"bin/s.js"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	runCommand(d, "/statusline npx -y ccstatus-x; touch "+marker)
	d.until(func() bool { return strings.Contains(d.m.statusLineView(), "not run") })
	if got := d.m.statusLineView(); !strings.Contains(got, "node_modules/ccstatus-x") {
		t.Errorf("status line %q does not say which copy", got)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the status line command ran")
	}
}

// TestStatusLineNotUnderWorkspaceRunnerConfig: a status line a package runner starts is not
// run where the workspace (the repository, up to its top) holds a configuration file that
// runner reads — an .npmrc's script-shell or node-options would run a program of the
// repository's, or a sandboxed command's, outside the sandbox after every turn — and says
// which file; one the runner does not read, or one above the repository, does not count.
func TestStatusLineNotUnderWorkspaceRunnerConfig(t *testing.T) {
	for _, tc := range []struct {
		name, file, cmd string
		refused         bool
		content         string // script-shell=/x/evil.sh when empty
	}{
		{"npmrc", ".npmrc", "npx -y ccstatus-x", true, ""},
		{"yarnrc", ".yarnrc.yml", "yarn dlx ccstatus-x", true, ""},
		{"bunfig", "bunfig.toml", "bunx ccstatus-x", true, ""},
		{"not read", ".yarnrc.yml", "npx -y ccstatus-x", false, ""},
		{"above the repository", "../.npmrc", "npx -y ccstatus-x", false, ""},
		{"npmrc that starts nothing", ".npmrc", "npx -y ccstatus-x", false, "engine-strict=true\nsave-exact=true\n"},
		{"npmrc naming a registry", ".npmrc", "npx -y ccstatus-x", true, "registry=https://npm.example/\n"},
	} {
		if tc.content == "" {
			tc.content = "script-shell=/x/evil.sh\n"
		}
		parent := t.TempDir()
		dir := filepath.Join(parent, "repo")
		for _, d := range []string{filepath.Join(dir, ".git"), filepath.Join(dir, "sub")} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(tc.file)), []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		got := workspaceCopy(tc.cmd+"; echo ok", filepath.Join(dir, "sub"))
		if want := filepath.Join("..", filepath.FromSlash(tc.file)); tc.refused && !strings.Contains(got, "not run") || tc.refused && !strings.Contains(got, want) {
			t.Errorf("%s: workspaceCopy = %q, want it to refuse and name %s", tc.name, got, want)
		}
		if !tc.refused && got != "" {
			t.Errorf("%s: workspaceCopy = %q, want it run", tc.name, got)
		}
	}

	d, dir := newCommandModel(t)
	marker := filepath.Join(t.TempDir(), "ran")
	if err := os.WriteFile(filepath.Join(dir, ".npmrc"), []byte("node-options=--require ./evil.js\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runCommand(d, "/statusline npx -y ccstatus-x; touch "+marker)
	d.until(func() bool { return strings.Contains(d.m.statusLineView(), "not run") })
	if got := d.m.statusLineView(); !strings.Contains(got, ".npmrc") {
		t.Errorf("status line %q does not say which file", got)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the status line command ran")
	}
}
