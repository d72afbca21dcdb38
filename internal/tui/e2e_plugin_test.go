package tui_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// marketFiles are a marketplace folder with a plugin that runs code (a hook) and one that
// does not.
var marketFiles = map[string]string{
	".claude-plugin/marketplace.json": `{"name": "demo-market", "owner": {"name": "Demo"}, "plugins": [
  {"name": "greeter", "source": "./plugins/greeter"}, {"name": "notes", "source": "./plugins/notes"}]}`,
	"plugins/greeter/.claude-plugin/plugin.json": `{"name": "greeter", "version": "1.2.0"}`,
	"plugins/greeter/commands/hello.md":          "---\ndescription: Say hello.\n---\nSay hello to $ARGUMENTS.\n",
	"plugins/greeter/hooks/hooks.json":           `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]}}`,
	"plugins/notes/commands/note.md":             "---\ndescription: Take a note.\n---\nNote: $ARGUMENTS\n",
}

// TestE2EPlugin: /plugin adds a marketplace, installs from it (a plugin that runs code only
// when the user says yes), lists the installed plugins and switches one off, as `keel
// plugin` does (item 9).
func TestE2EPlugin(t *testing.T) {
	srv := startScripted(t, e2eRules...)
	market := t.TempDir()
	for name, text := range marketFiles {
		path := filepath.Join(market, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	tm := startKeel(t, srv, dir, 140, 40)
	tm.waitFor("shift+tab")
	tm.command("/plugin")
	tm.waitFor("No plugins installed.")
	tm.command("/plugin marketplace add " + market)
	tm.waitFor("added marketplace demo-market (2 plugins)")
	tm.command("/plugin install greeter@demo-market")
	tm.waitFor("greeter@demo-market runs code on this machine (1 hook): /plugin install greeter@demo-market yes")
	tm.command("/plugin install greeter@demo-market yes")
	tm.waitFor("installed greeter@demo-market 1.2.0")
	tm.command("/plugin install notes")
	tm.waitFor("installed notes@demo-market")
	tm.command("/plugin")
	s := tm.waitFor("Plugins: enter switches one on or off")
	mustContain(t, "the plugin picker", s, "on   greeter@demo-market", "on   notes@demo-market")
	tm.keys("Enter")
	tm.waitFor("disabled greeter@demo-market")
	if b, _ := os.ReadFile(filepath.Join(dir+"-home", "settings.json")); !strings.Contains(string(b), `"greeter@demo-market": false`) {
		t.Errorf("the user's settings do not switch greeter off:\n%s", b)
	}
	tm.command("/plugin marketplace")
	tm.waitFor("demo-market")
}
