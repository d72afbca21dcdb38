package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeTree writes files (relative path → content) under root.
func writeTree(t *testing.T, root string, files map[string]string) string {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// keel plugin validate passes a well-formed plugin and exits 1 on one whose manifest breaks
// the rules, naming the problem; a path that is neither is an error too.
func TestPluginValidate(t *testing.T) {
	t.Chdir(t.TempDir())
	home := t.TempDir()
	good := writeTree(t, t.TempDir(), map[string]string{
		".claude-plugin/plugin.json": `{"name": "hello", "version": "1.0.0", "author": {"name": "me"}}`,
		"skills/greet/SKILL.md":      "---\nname: greet\ndescription: says hello\n---\nSay hello.\n",
	})
	if code, out := runKeel(t, home, "plugin", "validate", good); code != 0 || !strings.Contains(out, "Validation passed") {
		t.Errorf("keel plugin validate on a good plugin exited %d:\n%s", code, out)
	}
	bad := writeTree(t, t.TempDir(), map[string]string{
		".claude-plugin/plugin.json": `{"name": "has spaces", "author": {"email": "a@example.com"}}`,
	})
	code, out := runKeel(t, home, "plugin", "validate", bad)
	if code != 1 || !strings.Contains(out, "Validation failed") || !strings.Contains(out, "author has no name") {
		t.Errorf("keel plugin validate on a bad plugin exited %d:\n%s\nwant 1 and the missing author name", code, out)
	}
	if code, out := runKeel(t, home, "plugin", "validate", filepath.Join(good, "README")); code != 1 || !strings.Contains(out, "validate ") {
		t.Errorf("keel plugin validate on a missing file exited %d:\n%s", code, out)
	}
}

// A marketplace in a folder, added, its plugin installed, listed, disabled, enabled and
// uninstalled, and the marketplace removed: all offline.
func TestPluginLifecycle(t *testing.T) {
	t.Chdir(t.TempDir())
	home := t.TempDir()
	market := writeTree(t, t.TempDir(), map[string]string{
		".claude-plugin/marketplace.json": `{"name": "local", "owner": {"name": "me"},
  "plugins": [{"name": "hello", "source": "./plugins/hello"}]}`,
		"plugins/hello/.claude-plugin/plugin.json": `{"name": "hello", "version": "1.2.3"}`,
		"plugins/hello/skills/greet/SKILL.md":      "---\nname: greet\ndescription: says hello\n---\nSay hello.\n",
	})
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"plugin", "marketplace", "add", market}, "added marketplace local (1 plugins)"},
		{[]string{"plugin", "marketplace", "list"}, "local"},
		{[]string{"plugin", "install", "hello@local"}, "installed hello@local 1.2.3"},
		{[]string{"plugin", "list"}, "hello@local"},
		{[]string{"plugin", "disable", "hello@local"}, "disabled hello@local"},
		{[]string{"plugin", "list"}, "false"},
		{[]string{"plugin", "enable", "hello@local"}, "enabled hello@local"},
		{[]string{"plugin", "uninstall", "hello@local"}, "uninstalled hello@local"},
		{[]string{"plugin", "list"}, "(no plugins installed)"},
		{[]string{"plugin", "install", "hello@local"}, "installed hello@local 1.2.3"},
	}
	for _, s := range steps {
		if code, out := runKeel(t, home, s.args...); code != 0 || !strings.Contains(out, s.want) {
			t.Fatalf("keel %s exited %d:\n%s\nwant %q", strings.Join(s.args, " "), code, out, s.want)
		}
	}
	code, out := runKeel(t, home, "plugin", "list", "--json")
	var plugins []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &plugins) != nil || len(plugins) != 1 || plugins[0]["enabled"] != true {
		t.Errorf("keel plugin list --json exited %d:\n%s\nwant hello, enabled", code, out)
	}
	code, out = runKeel(t, home, "plugin", "marketplace", "list", "--json")
	var markets []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &markets) != nil || len(markets) != 1 {
		t.Errorf("keel plugin marketplace list --json exited %d:\n%s", code, out)
	}
	if code, out := runKeel(t, home, "plugin", "marketplace", "remove", "local"); code != 0 ||
		!strings.Contains(out, "uninstalled hello@local") || !strings.Contains(out, "removed marketplace local") {
		t.Errorf("keel plugin marketplace remove exited %d:\n%s\nwant its plugin uninstalled", code, out)
	}
	if code, out := runKeel(t, home, "plugin", "list"); code != 0 || !strings.Contains(out, "(no plugins installed)") {
		t.Errorf("keel plugin list after the marketplace went exited %d:\n%s", code, out)
	}
	if code, out := runKeel(t, home, "plugin", "uninstall", "hello@local"); code == 0 {
		t.Errorf("keel plugin uninstall of a plugin not installed succeeded:\n%s", out)
	}
}
