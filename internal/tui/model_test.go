package tui

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/waittest"
)

var update = flag.Bool("update", false, "rewrite the golden frames in testdata")

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// newSession starts a real session against a scripted model serving rules.
func newSession(t testing.TB, asker *Asker, rules ...scripted.Rule) (*keel.Session, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := scripted.Start(ctx, "", &scripted.Scenario{Rules: rules}, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	dir := t.TempDir()
	opts := keel.Options{Cwd: dir, Home: t.TempDir(), Model: "claude-test", APIKey: "test", BaseURL: srv.URL()}
	if asker != nil {
		opts.Ask = asker.Ask
	}
	sess, err := keel.New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess, dir
}

var durRE = regexp.MustCompile(`\b\d+(\.\d+)?(ms|s)\b`)

// frame is the screen as plain text: ANSI stripped, the temp dir and durations normalised,
// trailing spaces dropped.
func frame(m *Model) string {
	s := ansi.Strip(m.frameText())
	s = strings.ReplaceAll(s, m.cwd, "<cwd>")
	s = durRE.ReplaceAllString(s, "<dur>")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("frame %s mismatch (-want +got):\n%s", name, diff)
	}
}

func press(s string) tea.KeyPressMsg {
	switch s {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "shift+tab":
		return tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "left":
		return tea.KeyPressMsg{Code: tea.KeyLeft}
	case "right":
		return tea.KeyPressMsg{Code: tea.KeyRight}
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	case "ctrl+o":
		return tea.KeyPressMsg{Code: 'o', Mod: tea.ModCtrl}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	case "pgup":
		return tea.KeyPressMsg{Code: tea.KeyPgUp}
	case "pgdown":
		return tea.KeyPressMsg{Code: tea.KeyPgDown}
	}
	r := []rune(s)[0]
	return tea.KeyPressMsg{Code: r, Text: s}
}

func typeKeys(m *Model, s string) {
	for _, r := range s {
		m.Update(press(string(r)))
	}
}

func input(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// TestFrames feeds events and keys to the update function and compares whole frames.
func TestFrames(t *testing.T) {
	tests := []struct {
		name string
		w, h int
		msgs func(m *Model) []tea.Msg
	}{
		{name: "welcome", w: 80, h: 24},
		{name: "streaming", w: 80, h: 24, msgs: func(m *Model) []tea.Msg {
			m.addItem(&item{kind: kindUser, text: "explain main.go"})
			m.working, m.runStart = true, epoch.Add(-3*time.Second)
			return []tea.Msg{
				eventMsg{ev: keel.ThinkingDelta{Thinking: "The user wants an explanation."}},
				eventMsg{ev: keel.TextDelta{Text: "## main.go\n\nIt starts the **server**:\n\n```go\nhttp.ListenAndServe(\":8080\", nil)\n"}},
				tickMsg{},
				eventMsg{ev: keel.TextDelta{Text: "```\n\nand waits."}}, // not shown until the next tick
			}
		}},
		{name: "tools", w: 80, h: 24, msgs: func(m *Model) []tea.Msg {
			return []tea.Msg{
				eventMsg{ev: keel.ToolStart{ID: "1", Name: "Bash", Input: input(map[string]string{"command": "go test ./..."})}},
				eventMsg{ev: keel.ToolEnd{ID: "1", Name: "Bash", Duration: 1200 * time.Millisecond,
					Result: []keel.Block{keel.TextBlock("ok  \tkeel/a\t0.1s\nok  \tkeel/b\t0.2s\nok  \tkeel/c\t0.3s\nok  \tkeel/d\t0.4s\nok  \tkeel/e\t0.5s")}}},
				eventMsg{ev: keel.ToolStart{ID: "2", Name: "Edit", Input: input(map[string]string{"file_path": filepath.Join(m.cwd, "calc.go"), "old_string": "return a - b", "new_string": "return a + b"})}},
				eventMsg{ev: keel.ToolEnd{ID: "2", Name: "Edit", Duration: 5 * time.Millisecond}},
				eventMsg{ev: keel.ToolStart{ID: "3", Name: "Read", Input: input(map[string]string{"file_path": "missing.go"})}},
				eventMsg{ev: keel.ToolEnd{ID: "3", Name: "Read", IsError: true, Duration: time.Millisecond}},
				eventMsg{ev: keel.ToolStart{ID: "4", Name: "Grep", Input: input(map[string]string{"pattern": "TODO"})}},
				eventMsg{ev: keel.ToolProgress{ID: "4", Message: "searching 120 files"}},
			}
		}},
		{name: "tools-expanded-wide", w: 120, h: 20, msgs: func(m *Model) []tea.Msg {
			return []tea.Msg{
				eventMsg{ev: keel.ToolStart{ID: "1", Name: "Write", Input: input(map[string]string{"file_path": "hello.txt", "content": "one\ntwo\n"})}},
				eventMsg{ev: keel.ToolEnd{ID: "1", Name: "Write", Duration: 2 * time.Millisecond}},
				press("ctrl+o"),
			}
		}},
		{name: "permission", w: 80, h: 24, msgs: func(m *Model) []tea.Msg {
			return []tea.Msg{askMsg{req: keel.PermissionRequest{Tool: "Bash", Command: "rm -rf build", Reason: "shell commands need approval",
				Suggestions: []string{"Bash(rm:*)"}, Agent: "cleaner", AgentColor: "red"}, reply: make(chan keel.PermissionAnswer, 1)}, press("down")}
		}},
		{name: "permission-bash", w: 80, h: 24, msgs: func(m *Model) []tea.Msg {
			return []tea.Msg{askMsg{req: keel.PermissionRequest{Tool: "Bash", Command: "seq 1 10", Description: "Print the numbers one to ten",
				Reason: "shell commands need approval", Suggestions: []string{"Bash(seq:*)"}}, reply: make(chan keel.PermissionAnswer, 1)}}
		}},
		{name: "permission-edit", w: 80, h: 24, msgs: func(m *Model) []tea.Msg {
			return []tea.Msg{askMsg{req: keel.PermissionRequest{Tool: "Edit", Paths: []string{"calc.py"}, Reason: "edits need approval",
				Suggestions: []string{"Edit(./calc.py)"}}, reply: make(chan keel.PermissionAnswer, 1)}, press("down"), press("down")}
		}},
		{name: "markdown-lines", w: 80, h: 24, msgs: func(m *Model) []tea.Msg {
			var lines []string
			for i := 1; i <= 12; i++ {
				lines = append(lines, fmt.Sprintf("Step %d: do **thing** %d", i, i))
			}
			return []tea.Msg{eventMsg{ev: keel.TextDelta{Text: strings.Join(lines, "\n")}}, eventMsg{ev: keel.AssistantMessage{}}}
		}},
		{name: "commands", w: 80, h: 24, msgs: func(m *Model) []tea.Msg {
			typeKeys(m, "/c")
			return []tea.Msg{press("down")}
		}},
		{name: "tasks-and-mode", w: 80, h: 24, msgs: func(m *Model) []tea.Msg {
			return []tea.Msg{
				eventMsg{ev: keel.TaskStarted{TaskID: "t1", Description: "Explore the parser", SubagentType: "Explore"}},
				eventMsg{ev: keel.TaskStarted{TaskID: "t2", Description: "Run the benchmarks", SubagentType: "general-purpose"}},
				eventMsg{ev: keel.TaskNotification{TaskID: "t2", Status: "completed", Summary: "all within 2%"}},
				press("shift+tab"),
			}
		}},
		{name: "help-narrow", w: 60, h: 30, msgs: func(m *Model) []tea.Msg {
			typeKeys(m, "/help")
			return []tea.Msg{press("enter")}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sess, _ := newSession(t, nil)
			m := New(Config{Backend: sess, NoColor: true, Version: "test", Now: func() time.Time { return epoch }})
			defer m.Close()
			m.Update(tea.WindowSizeMsg{Width: tt.w, Height: tt.h})
			if tt.msgs != nil {
				for _, msg := range tt.msgs(m) {
					m.Update(msg)
				}
			}
			got := frame(m)
			if n := strings.Count(got, "\n") + 1; n != tt.h {
				t.Errorf("frame has %d lines, want the terminal height %d", n, tt.h)
			}
			for i, l := range strings.Split(got, "\n") {
				if w := ansi.StringWidth(l); w > tt.w {
					t.Errorf("line %d is %d cells wide, more than %d: %q", i, w, tt.w, l)
				}
			}
			golden(t, tt.name, got)
		})
	}
}

// driver runs commands the way the program does and feeds every message they produce to the
// model on the test goroutine. Spinner ticks are dropped: they only redraw.
type driver struct {
	t    *testing.T
	m    *Model
	msgs chan tea.Msg
}

func newDriver(t *testing.T, m *Model) *driver {
	return &driver{t: t, m: m, msgs: make(chan tea.Msg, 64)}
}

func (d *driver) run(c tea.Cmd) {
	if c == nil {
		return
	}
	go func() {
		msg := c()
		if b, ok := msg.(tea.BatchMsg); ok {
			for _, c := range b {
				d.run(c)
			}
			return
		}
		if msg != nil {
			d.msgs <- msg
		}
	}()
}

// until processes messages until done holds, failing after a deadline.
func (d *driver) until(done func() bool) {
	d.t.Helper()
	deadline := waittest.Context(d.t).Done()
	for !done() {
		select {
		case msg := <-d.msgs:
			if _, ok := msg.(tickMsg); ok {
				continue
			}
			_, c := d.m.Update(msg)
			d.run(c)
		case <-deadline:
			d.t.Fatalf("condition not reached; frame:\n%s", frame(d.m))
		}
	}
}

// TestRealSessionApprove drives a real session: the prompt goes to the scripted model, the
// Bash call asks, the answer goes back through the Asker, the command runs.
func TestRealSessionApprove(t *testing.T) {
	asker := NewAsker()
	sess, dir := newSession(t, asker,
		scripted.Rule{When: scripted.Match{UserText: "make a file"}, Reply: []scripted.Block{scripted.ToolUse("Bash", map[string]string{"command": "touch made.txt"})}},
		scripted.Rule{When: scripted.Match{ToolResult: "Bash"}, Reply: []scripted.Block{scripted.Text("Done, the file is **there**.")}},
	)
	m := New(Config{Backend: sess, Asker: asker, Prompt: "make a file", NoColor: true, Version: "test"})
	defer m.Close()
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	d := newDriver(t, m)
	d.run(m.Init())
	d.until(func() bool { return len(m.asks) > 0 })
	if got := frame(m); !strings.Contains(got, "touch made.txt") || !strings.Contains(got, "Do you want to proceed?") {
		t.Fatalf("no permission prompt for the command:\n%s", got)
	}
	_, cmd := m.Update(press("1"))
	d.run(cmd)
	d.until(func() bool { return !m.working })
	got := frame(m)
	for _, want := range []string{"❯ make a file", "● Bash(touch made.txt) ✓", "Done, the file is there."} {
		if !strings.Contains(got, want) {
			t.Errorf("frame lacks %q:\n%s", want, got)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "made.txt")); err != nil {
		t.Errorf("approved command did not run: %v", err)
	}
}

// TestDenyWithReason checks the reason typed after "No" reaches the session.
func TestDenyWithReason(t *testing.T) {
	sess, _ := newSession(t, nil)
	m := New(Config{Backend: sess, NoColor: true})
	defer m.Close()
	reply := make(chan keel.PermissionAnswer, 1)
	m.Update(askMsg{req: keel.PermissionRequest{Tool: "Bash", Command: "rm -rf /"}, reply: reply})
	m.Update(press("n"))
	typeKeys(m, "use git clean")
	m.Update(press("enter"))
	want := keel.PermissionAnswer{Reason: "the user denied this call: use git clean"}
	if diff := cmp.Diff(want, waittest.Recv(t, "the permission answer", reply)); diff != "" {
		t.Errorf("answer mismatch (-want +got):\n%s", diff)
	}
	if len(m.asks) != 0 {
		t.Errorf("prompt still open after the answer")
	}
}

// TestHistoryAndPaste covers ↑/↓ history and folding of a large paste.
func TestHistoryAndPaste(t *testing.T) {
	sess, _ := newSession(t, nil)
	m := New(Config{Backend: sess, NoColor: true})
	defer m.Close()
	m.inp.remember("first")
	m.inp.remember("second")
	typeKeys(m, "draft")
	m.Update(press("up"))
	m.Update(press("up"))
	if got := m.input.Value(); got != "first" {
		t.Errorf("after ↑↑ input = %q, want first", got)
	}
	m.Update(press("down"))
	m.Update(press("down"))
	if got := m.input.Value(); got != "draft" {
		t.Errorf("after ↓↓ input = %q, want the draft back", got)
	}
	m.input.Reset()
	big := strings.Repeat("line\n", 30)
	m.Update(tea.PasteMsg{Content: big})
	if got := m.input.Value(); got != "[Pasted text #1 +31 lines]" {
		t.Errorf("large paste shown as %q", got)
	}
	if got := m.inp.expand(m.input.Value()); got != big {
		t.Errorf("paste does not expand back to its text")
	}
}

// TestInitReadsProject: /init writes KEEL.md from what the project's files say — its
// commands, what CI runs, its layout, its README — and never overwrites one.
func TestInitReadsProject(t *testing.T) {
	dir := t.TempDir()
	for path, text := range map[string]string{
		"go.mod":                   "module example.com/calc\n\ngo 1.26\n",
		"Makefile":                 "build:\n\tgo build ./...\ntest: build\n\tgo test ./...\nlint:\n\tgolangci-lint run\nhelper:\n\ttrue\n",
		"README.md":                "# calc\n\n[![ci](x)](y)\n\nA calculator library\nwith a command line.\n\n## Install\n",
		".github/workflows/ci.yml": "jobs:\n  test:\n    steps:\n      - run: make lint\n      - run: go test -race ./...\n      - run: echo done\n",
		"cmd/calc/main.go":         "package main",
		"internal/ops/add.go":      "package ops",
		"internal/ops/sub.go":      "package ops",
		"internal/ops/README":      "ops",
		"node_modules/x/index.js":  "",
		".golangci.yml":            "",
		"AGENTS.md":                "be nice",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, path)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, path), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path, err := writeProjectMemory(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	for _, want := range []string{
		"A calculator library with a command line.",
		"- Test: `go test ./...` (go.mod)",
		"- make lint: `make lint` (Makefile)",
		"- `go test -race ./...`",
		"- `cmd/`: 1 files, mostly .go",
		"- `internal/`: 3 files, mostly .go",
		"- Follow golangci-lint (.golangci.yml).",
		"AGENTS.md",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("KEEL.md lacks %q:\n%s", want, b)
		}
	}
	for _, unwanted := range []string{"node_modules", "make helper", "echo done"} {
		if strings.Contains(string(b), unwanted) {
			t.Errorf("KEEL.md mentions %q:\n%s", unwanted, b)
		}
	}
	if _, err := writeProjectMemory(dir); err == nil {
		t.Errorf("second /init overwrote KEEL.md")
	}
}

func TestPersistRules(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, ".keel"), 0o755)
	os.WriteFile(filepath.Join(dir, ".keel", "settings.local.json"), []byte(`{"model":"x","permissions":{"allow":["Read"]}}`), 0o644)
	if err := persistRules(dir, []string{"Bash(rm:*)", "Read"}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, ".keel", "settings.local.json"))
	var got map[string]any
	json.Unmarshal(b, &got)
	want := map[string]any{"model": "x", "permissions": map[string]any{"allow": []any{"Read", "Bash(rm:*)"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("settings mismatch (-want +got):\n%s", diff)
	}
}

// BenchmarkFirstFrame measures start-up to the first rendered frame: build the model, run
// Init, size it and render, as the program does before its first paint.
func BenchmarkFirstFrame(b *testing.B) {
	sess, _ := newSession(b, nil)
	for b.Loop() {
		m := New(Config{Backend: sess, Version: "bench"})
		m.Init()
		m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
		_ = m.View()
		m.Close()
	}
}

// TestStartupNoticesAreShown: what went wrong while the session opened (here a settings file
// that does not parse) is on screen before the first prompt, and counted in the status line.
func TestStartupNoticesAreShown(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".keel"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".keel", "settings.json"), []byte("{\n  \"model\": \n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sess, err := keel.New(t.Context(), keel.Options{Cwd: dir, Home: t.TempDir(), Model: "claude-test", APIKey: "test",
		BaseURL: "http://127.0.0.1:1", IgnoreSettingsErrors: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	m := New(Config{Backend: sess, NoColor: true})
	defer m.Close()
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 20})
	got := frame(m)
	if !strings.Contains(got, "settings.json:3:1") || !strings.Contains(got, "⚠ 1 warning") {
		t.Errorf("start-up notice not on screen:\n%s", got)
	}
}

// TestAllowAllEdits: "allow all edits this session" allows the edit and switches the session
// to acceptEdits, so the next edits are not asked about.
func TestAllowAllEdits(t *testing.T) {
	sess, _ := newSession(t, nil)
	m := New(Config{Backend: sess, NoColor: true})
	defer m.Close()
	reply := make(chan keel.PermissionAnswer, 1)
	m.Update(askMsg{req: keel.PermissionRequest{Tool: "Write", Paths: []string{"a.txt"}, Suggestions: []string{"Edit(./a.txt)"}}, reply: reply})
	m.Update(press("3"))
	if got := waittest.Recv(t, "the permission answer", reply); !got.Allow || got.Always {
		t.Errorf("answer %+v, want allowed once", got)
	}
	if mode := sess.PermissionMode(); mode != "acceptEdits" {
		t.Errorf("permission mode %q after allowing all edits, want acceptEdits", mode)
	}
	m.Update(askMsg{req: keel.PermissionRequest{Tool: "Write", Paths: []string{"b.txt"}}, reply: make(chan keel.PermissionAnswer, 1)})
	if strings.Contains(frame(m), "allow all edits") {
		t.Errorf("allow all edits offered again in acceptEdits mode:\n%s", frame(m))
	}
}
