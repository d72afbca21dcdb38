package tui_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/provider/scripted"
)

// command types a slash command and enters it.
func (tm *term) command(line string) {
	tm.typeText(line)
	tm.keys("Enter")
}

// TestE2ESlashCommandsInspect: the commands that show what the session is made of answer
// from a user's keystrokes (item 9).
func TestE2ESlashCommandsInspect(t *testing.T) {
	srv := startScripted(t, e2eRules...)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tm := startKeel(t, srv, dir, 120, 50)
	tm.waitFor("shift+tab")
	tm.command("/doctor")
	tm.waitFor("Doctor ·")
	mustContain(t, "/doctor", tm.waitFor("✓ go: go1."), "✓ model API: answers and accepts the key", "✓ keel:")
	tm.command("/context")
	mustContain(t, "/context", tm.waitFor("Free space"), "System prompt", "System tools", "Messages")
	tm.command("/status")
	mustContain(t, "/status", tm.waitFor("permission mode"), "claude-scripted", "output style")
	tm.command("/hooks")
	tm.waitFor("No hooks configured")
	tm.command("/todos")
	tm.waitFor("No todos yet")
	tm.command("/bashes")
	tm.waitFor("No background shells")
	tm.command("/skills")
	tm.waitFor("Skills (run one with /NAME)")
	tm.command("/init")
	tm.waitFor("from the project's files")
	if b, err := os.ReadFile(filepath.Join(dir, "KEEL.md")); err != nil || !strings.Contains(string(b), "go test ./...") {
		t.Errorf("/init wrote (%v):\n%s", err, b)
	}
	tm.command("please say hello")
	tm.waitFor("Hello from the scripted model.")
	tm.command("/export chat.md")
	tm.waitFor("wrote the conversation to")
	if b, err := os.ReadFile(filepath.Join(dir, "chat.md")); err != nil || !strings.Contains(string(b), "please say hello") {
		t.Errorf("/export wrote (%v):\n%s", err, b)
	}
	tm.command("/bug the answer was too short")
	s := tm.waitFor("wrote the bug report to")
	reports, _ := filepath.Glob(filepath.Join(dir+"-home", "bug-reports", "keel-bug-*.md"))
	if len(reports) != 1 {
		t.Errorf("/bug wrote %d reports:\n%s", len(reports), s)
	}
}

// TestE2ESlashCommandsChange: the pickers of /model (checked against the model list),
// /permissions and /config, and /statusline, /theme and /vim, from a user's keystrokes
// (item 9).
func TestE2ESlashCommandsChange(t *testing.T) {
	srv := startScripted(t, e2eRules...)
	dir := t.TempDir()
	tm := startKeel(t, srv, dir, 120, 40)
	tm.waitFor("shift+tab")
	tm.command("/model gpt-99-turbo")
	tm.waitFor(`unknown model "gpt-99-turbo"`)
	tm.command("/model")
	tm.waitFor("Model (now claude-scripted)")
	tm.typeText("haiku")
	tm.keys("Enter")
	tm.waitFor("model set to claude-haiku")

	tm.command("/permissions")
	tm.waitFor("Permission rules")
	tm.keys("Down", "Down", "Enter")
	tm.waitFor("New deny rule")
	tm.command("Bash(rm:*)")
	tm.waitFor("added the deny rule Bash(rm:*)")
	tm.command("/permissions")
	tm.waitFor("deny   Bash(rm:*)")
	tm.keys("Escape")
	tm.waitFor(`Try "explain this codebase"`) // before typing on: an Esc and a key at once read as alt+key

	tm.command("/config")
	tm.waitFor("Output style      default")
	tm.keys("Enter")
	tm.waitFor("Output style (kept in")
	tm.keys("Down", "Enter")
	tm.waitFor("output style Explanatory from the next prompt")
	if b, _ := os.ReadFile(filepath.Join(dir, ".keel", "settings.local.json")); !strings.Contains(string(b), `"outputStyle": "Explanatory"`) {
		t.Errorf("the output style is not kept: %s", b)
	}

	tm.command(`/statusline printf 'sl: %s' "$(jq -r .model.id 2>/dev/null || echo model)"`)
	tm.waitFor("sl: ")
	tm.command("/theme mono")
	tm.waitFor("theme mono")
	tm.command("/vim")
	tm.waitFor("vim editing on")
	tm.typeText("hello there")
	tm.keys("Escape")
	tm.waitFor("NORMAL")
	tm.typeText("0x")
	tm.waitFor("❯ ello there") // x deleted the first character
}

// TestE2EPromptCommands: /review and /security-review show the command as typed and send the
// model the instructions behind it; /add-dir adds a working directory (item 9).
func TestE2EPromptCommands(t *testing.T) {
	srv := startScripted(t, append([]scripted.Rule{
		{When: scripted.Match{UserText: "Review a pull request"}, Reply: []scripted.Block{scripted.Text("Reviewing pull request 42.")}},
		{When: scripted.Match{UserText: "security problems"}, Reply: []scripted.Block{scripted.Text("No security problems found.")}},
	}, e2eRules...)...)
	dir := t.TempDir()
	other := t.TempDir()
	tm := startKeel(t, srv, dir, 120, 40)
	tm.waitFor("shift+tab")
	tm.command("/review 42")
	s := tm.waitFor("Reviewing pull request 42.")
	mustContain(t, "/review", s, "❯ /review 42")
	if strings.Contains(s, "gh pr diff") {
		t.Errorf("the transcript shows the instructions instead of the command:\n%s", s)
	}
	tm.command("/security-review")
	tm.waitFor("No security problems found.")
	tm.command("/add-dir " + other)
	tm.waitFor("to the working directories")
}

// TestE2EMemoryEdit: /memory lists the memory files and offers the project's KEEL.md when
// there is none; enter opens it in $EDITOR, the UI back once the editor exits (item 9).
func TestE2EMemoryEdit(t *testing.T) {
	srv := startScripted(t, e2eRules...)
	dir := t.TempDir()
	ed := filepath.Join(t.TempDir(), "ed.sh")
	if err := os.WriteFile(ed, []byte("#!/bin/sh\necho '- indent with tabs' >> \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tm := startKeelEnv(t, srv, dir, 120, 30, []string{"EDITOR=" + ed})
	tm.waitFor("shift+tab")
	tm.command("/memory")
	mustContain(t, "/memory", tm.waitFor("Memory files: enter opens one in your editor"), filepath.Join(dir, "KEEL.md")+" (new)")
	tm.keys("Up") // the new project file is the last entry; up wraps to it
	tm.keys("Enter")
	tm.waitFor("edited " + filepath.Join(dir, "KEEL.md"))
	if b, err := os.ReadFile(filepath.Join(dir, "KEEL.md")); err != nil || string(b) != "- indent with tabs\n" {
		t.Errorf("the editor wrote (%v) %q", err, b)
	}
}
