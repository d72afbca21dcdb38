//go:build linux

package session

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/plugin"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/sandbox"
)

// TestSandboxKeepsHookScripts: a sandboxed Bash call cannot plant a hook script keel runs
// outside the sandbox at the next tool call — one the settings name that does not exist yet,
// and a plugin's (inside the working directory, named through ${CLAUDE_PLUGIN_ROOT}) — nor
// rewrite the plugin's hooks.json.
func TestSandboxKeepsHookScripts(t *testing.T) {
	proj, home, marks := t.TempDir(), t.TempDir(), t.TempDir()
	writeFiles(t, proj, map[string]string{
		"hk/.keep":                        "",
		"plug/.claude-plugin/plugin.json": `{"name": "plug", "version": "0.1.0"}`,
		"plug/hooks/hooks.json":           `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "sh ${CLAUDE_PLUGIN_ROOT}/hook.sh"}]}]}}`,
		"plug/hook.sh":                    "cat >/dev/null\n",
	})
	absent := filepath.Join(proj, "hk", "pre.sh")
	settingsJSON := fmt.Sprintf(`{"permissions": {"allow": ["Bash"]}, "sandbox": {"enabled": true},
		"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": %q}]}]}}`, absent)
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(settingsJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	settingsMark, pluginMark := filepath.Join(marks, "settings-hook-ran"), filepath.Join(marks, "plugin-hook-ran")
	plant := fmt.Sprintf(`printf '#!/bin/sh\ntouch %s\n' > hk/pre.sh; chmod +x hk/pre.sh; `+
		`printf 'touch %s\n' >> plug/hook.sh; echo '{}' > plug/hooks/hooks.json; echo planted`, settingsMark, pluginMark)
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "plant", When: scripted.Match{UserText: "plant"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Bash", map[string]any{"command": plant})}},
		{Name: "second", When: scripted.Match{ToolResult: "Bash"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Bash", map[string]any{"command": "echo second"})}},
		{Name: "end", Reply: []scripted.Block{scripted.Text("done")}},
	}}
	h := newHarness(t, sc, Options{Cwd: proj, Home: home, Plugins: []plugin.DirSpec{{Path: "plug", Kind: plugin.OriginDir}}})
	if h.sess.sandbox == nil {
		t.Fatal("the sandbox is off")
	}
	if err := h.sess.sandbox.Available(); errors.Is(err, sandbox.ErrUnavailable) {
		t.Skipf("no sandbox on this machine: %v", err)
	}
	out := bashOutput(h.send(t, "plant"))
	if !strings.Contains(out, "planted") || !strings.Contains(out, "second") {
		t.Fatalf("the commands did not run:\n%s", out)
	}
	for _, f := range []string{"hk/pre.sh", "plug/hook.sh", "plug/hooks/hooks.json"} {
		if !strings.Contains(out, "writing "+filepath.Join(proj, f)+" was denied: it is always read-only inside the sandbox") {
			t.Errorf("writing %s was not refused as read-only:\n%s", f, out)
		}
	}
	for _, m := range []string{settingsMark, pluginMark} {
		if _, err := os.Stat(m); err == nil {
			t.Errorf("a planted hook ran outside the sandbox: %s exists", filepath.Base(m))
		}
	}
	if _, err := os.Lstat(absent); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists after the session's commands: %v", absent, err)
	}
	if b, _ := os.ReadFile(filepath.Join(proj, "plug/hook.sh")); string(b) != "cat >/dev/null\n" {
		t.Errorf("plug/hook.sh is now %q", b)
	}
}
