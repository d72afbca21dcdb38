package tui_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/provider/scripted"
)

var wordsRules = []scripted.Rule{
	{When: scripted.Match{UserText: "count to ten"}, Reply: []scripted.Block{
		scripted.ToolUse("Bash", map[string]any{"command": "seq 1 10", "description": "Print the numbers one to ten"})}},
	{When: scripted.Match{ToolResult: "Bash"}, Reply: []scripted.Block{scripted.Text("Counted.")}},
	{When: scripted.Match{UserText: "list the steps"}, Reply: []scripted.Block{scripted.Text(
		"Step one: read the code\nStep two: run the tests\nStep three: fix the bug\nStep four: run them again")}},
}

// TestE2EPlainWords: the permission box shows what the call is for and offers a rule a person
// would write; a finished command shows its first lines of output; Markdown keeps its line
// breaks (item 8).
func TestE2EPlainWords(t *testing.T) {
	srv := startScripted(t, wordsRules...)
	tm := startKeel(t, srv, t.TempDir(), 100, 30)
	tm.waitFor("shift+tab")
	tm.typeText("count to ten")
	tm.keys("Enter")
	s := tm.waitFor("Do you want to proceed?")
	mustContain(t, "the permission box", s, "seq 1 10", "Print the numbers one to ten", "don't ask again for Bash(seq:*)")
	tm.keys("Enter")
	s = tm.waitFor("Counted.")
	mustContain(t, "the finished call", s, "⎿ 1", "    2", "    3", "… +7 lines (ctrl+o)")
	tm.typeText("list the steps")
	tm.keys("Enter")
	s = tm.waitFor("Step four: run them again")
	mustContain(t, "the answer", s, "\n  Step one: read the code\n", "\n  Step two: run the tests\n")
}

// TestE2EInterruptSaysSo: Esc during a run reads "interrupted", not an internal result code.
func TestE2EInterruptSaysSo(t *testing.T) {
	srv := startScripted(t, e2eRules...)
	tm := startKeel(t, srv, t.TempDir(), 80, 24)
	tm.waitFor("shift+tab")
	tm.typeText("go slowly")
	tm.keys("Enter")
	tm.waitFor("esc to interrupt)")
	tm.keys("Escape")
	tm.waitFor("interrupted")
	tm.typeText("now say hello")
	tm.keys("Enter")
	s := tm.waitFor("Hello from the scripted model.")
	for _, code := range []string{"error_during_execution", "context canceled"} {
		if strings.Contains(s, code) {
			t.Errorf("the screen shows %q after Esc:\n%s", code, s)
		}
	}
}

// TestE2EBypassAsksOnce: bypassPermissions mode asks before the first session runs in it;
// no exits, yes is remembered (item 8).
func TestE2EBypassAsksOnce(t *testing.T) {
	srv := startScripted(t, e2eRules...)
	dir := t.TempDir()
	tm := startKeelOpts(t, srv, dir, 100, 30, termOptions{keep: true}, "--permission-mode", "bypassPermissions")
	tm.waitFor("keel is starting in bypassPermissions mode")
	tm.keys("Escape")
	tm.waitForAll("[keel exited 0]")

	tm = startKeel(t, srv, dir, 100, 30, "--permission-mode", "bypassPermissions")
	tm.waitFor("keel is starting in bypassPermissions mode")
	tm.keys("1")
	// The question is a program of its own that reads the keyboard until it ends: keys typed
	// before the conversation's screen is up would go to it and be lost.
	tm.waitFor("shift+tab")
	tm.typeText("make a file")
	tm.keys("Enter")
	if s := tm.waitFor("The file is there now."); strings.Contains(s, "Do you want to proceed?") {
		t.Errorf("bypassPermissions asked about a call:\n%s", s)
	}
	tm.typeText("/exit")
	tm.keys("Enter")

	tm = startKeel(t, srv, dir, 100, 30, "--permission-mode", "bypassPermissions")
	if s := tm.waitFor("shift+tab"); strings.Contains(s, "keel is starting in bypassPermissions mode") {
		t.Errorf("asked again after the answer was recorded:\n%s", s)
	}
}

// TestE2ESkipPermissionsFlagAgrees: --dangerously-skip-permissions is the agreement itself
// (a script driving the UI has nobody to answer), and records nothing.
func TestE2ESkipPermissionsFlagAgrees(t *testing.T) {
	srv := startScripted(t, e2eRules...)
	dir := t.TempDir()
	tm := startKeel(t, srv, dir, 100, 30, "--dangerously-skip-permissions")
	if s := tm.waitFor("shift+tab"); strings.Contains(s, "keel is starting in bypassPermissions mode") || !strings.Contains(s, "bypassPermissions") {
		t.Errorf("--dangerously-skip-permissions asked, or did not start in bypassPermissions:\n%s", s)
	}
	tm.command("/exit")
	tm = startKeel(t, srv, dir, 100, 30, "--permission-mode", "bypassPermissions")
	tm.waitFor("keel is starting in bypassPermissions mode")
}

// TestE2ESettingsErrorBeforeTrust: a settings file that does not parse is reported, with its
// file, line and column, before the trust question is asked (item 8).
func TestE2ESettingsErrorBeforeTrust(t *testing.T) {
	srv := startScripted(t, e2eRules...)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte("{\n  \"model\": \"x\",\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tm := startKeelOpts(t, srv, dir, 100, 30, termOptions{keep: true})
	s := tm.waitForAll("[keel exited")
	mustContain(t, "the terminal", s, "settings.json:3:1", "--ignore-settings-errors")
	if strings.Contains(s, "Do you trust") {
		t.Errorf("the trust question came before the settings error:\n%s", s)
	}
}

// TestE2ERetryShown: a retried model request is said under the prompt while keel waits, in
// the words the headless stderr line uses (item 7).
func TestE2ERetryShown(t *testing.T) {
	srv := startScripted(t,
		scripted.Rule{When: scripted.Match{UserText: "busy model"}, Times: 1, Fault: &scripted.Fault{Status: 529, RetryAfter: 3}},
		scripted.Rule{When: scripted.Match{UserText: "busy model"}, Reply: []scripted.Block{scripted.Text("Answered after a retry.")}})
	tm := startKeel(t, srv, t.TempDir(), 120, 30)
	tm.waitFor("shift+tab")
	tm.command("busy model")
	tm.waitFor("retrying (attempt 2 of ")
	tm.waitFor("Answered after a retry.")
}
