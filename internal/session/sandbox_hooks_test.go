//go:build linux

package session

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
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

// TestSandboxKeepsWhatRunsOutside: a sandboxed Bash call cannot change what keel runs or
// allows outside the sandbox later: a plugin's agents, bin/, skills and commands (the plugin
// lies in the working directory), the status line's script, a stdio MCP server's, a script a
// hook gives bash on stdin, nor a module beside a Python hook script; and a json.py it puts
// beside a Python hook script that sits in the project itself is not what the hook imports.
func TestSandboxKeepsWhatRunsOutside(t *testing.T) {
	proj, home, marks := t.TempDir(), t.TempDir(), t.TempDir()
	writeFiles(t, proj, map[string]string{
		"plug/.claude-plugin/plugin.json": `{"name": "plug", "version": "0.1.0"}`,
		"status/.keep":                    "",
		"mcp/.keep":                       "",
		"hk/.keep":                        "",
		"tools/hook.py":                   "import json, sys\njson.load(sys.stdin)\n",
		"roothook.py":                     "import json, sys\njson.load(sys.stdin)\n",
	})
	hookList := `[{"type": "command", "command": "bash < $CLAUDE_PROJECT_DIR/hk/stdin.sh || true"}`
	python := exec.Command("python3", "-c", "import sys; sys.exit(sys.version_info < (3, 11))").Run() == nil
	if python {
		hookList += `, {"type": "command", "command": "python3 $CLAUDE_PROJECT_DIR/tools/hook.py"}, {"type": "command", "command": "python3 $CLAUDE_PROJECT_DIR/roothook.py"}`
	}
	settingsJSON := `{"permissions": {"allow": ["Bash"]}, "sandbox": {"enabled": true}, "statusLine": {"type": "command", "command": "status/status.sh"},
		"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": ` + hookList + `]}]}}`
	writeFiles(t, home, map[string]string{
		"settings.json": settingsJSON,
		"mcp.json":      `{"mcpServers": {"srv": {"command": "` + proj + `/mcp/srv.sh"}}}`,
	})
	toolsMark, rootMark := filepath.Join(marks, "tools-json-imported"), filepath.Join(marks, "root-json-imported")
	planted := []string{"plug/agents/helper.md", "plug/bin/docker", "plug/skills/x/SKILL.md", "plug/commands/c.md",
		"status/status.sh", "mcp/srv.sh", "hk/stdin.sh", "tools/json.py"}
	var plant strings.Builder
	plant.WriteString("mkdir -p plug/agents plug/bin plug/skills/x plug/commands; ")
	for _, f := range planted[:len(planted)-1] {
		fmt.Fprintf(&plant, "echo 'touch %s' > %s; ", filepath.Join(marks, filepath.Base(f)), f)
	}
	fmt.Fprintf(&plant, `printf 'open(%q, "w")\n' > tools/json.py; printf 'open(%q, "w")\n' > json.py; echo planted`, toolsMark, rootMark)
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "plant", When: scripted.Match{UserText: "plant"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Bash", map[string]any{"command": plant.String()})}},
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
	for _, f := range planted {
		if _, err := os.Lstat(filepath.Join(proj, f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was written from inside the sandbox (%v):\n%s", f, err, out)
		}
	}
	if _, err := os.Stat(filepath.Join(proj, "json.py")); err != nil {
		t.Errorf("json.py in the project was not written (the project is writable): %v", err)
	}
	if !python {
		t.Log("no python3 ≥ 3.11: its hooks not run")
	}
	for _, m := range []string{toolsMark, rootMark} {
		if _, err := os.Stat(m); err == nil {
			t.Errorf("a planted module ran outside the sandbox: %s exists", filepath.Base(m))
		}
	}
}
