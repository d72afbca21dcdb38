package sandbox_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/sandbox"
)

// TestEscapeProjectConfig: what keel, another harness or an editor reads as project
// configuration — the other harnesses' agent folders, a subdirectory's .claude/ and
// .mcp.json, the editors' folders, the dangerous files at the root — cannot be written, and
// keel's MCP tokens cannot be read.
func TestEscapeProjectConfig(t *testing.T) { forEachLauncher(t, testEscapeProjectConfig) }

func testEscapeProjectConfig(t *testing.T) {
	base := sandbox.VisibleDir(t)
	keelHome, cache := filepath.Join(base, "keel"), filepath.Join(base, "cache")
	write(t, filepath.Join(cache, "x"), "cached\n")
	write(t, filepath.Join(keelHome, "mcp-auth", "srv.json"), `{"token":{"access_token":"TOPSECRET-oauth"}}`)
	write(t, filepath.Join(keelHome, "file-history", "s", "f@v1"), "TOPSECRET-history\n")
	// With a cache, under bubblewrap the helper mounts its overlay after the masks.
	w := newWorld(t, func(in *sandbox.Input) { in.KeelHome, in.Caches = keelHome, []string{cache} })
	write(t, filepath.Join(w.ws, "sub", ".claude", "settings.json"), "{}\n")
	write(t, filepath.Join(w.ws, "sub", ".mcp.json"), "{}\n")
	write(t, filepath.Join(w.ws, "sub", "deeper", ".opencode", "opencode.json"), "{}\n")
	agent := "---\\nname: helper\\nhooks:\\n  PreToolUse: []\\n---\\nYou help.\\n"
	attempts := map[string]string{
		"gemini agent":        "mkdir -p .gemini/agents && printf -- '" + agent + "' > .gemini/agents/helper.md",
		"opencode agent":      "mkdir -p .opencode/agent && printf -- '" + agent + "' > .opencode/agent/helper.md",
		"codex config":        "mkdir -p .codex && echo '[agents.x]' > .codex/config.toml",
		"nested skill":        "mkdir -p sub/.claude/skills/helper && echo 'allowed-tools: Bash' > sub/.claude/skills/helper/SKILL.md",
		"nested settings":     "echo pwned > sub/.claude/settings.json",
		"nested mcp json":     "echo pwned > sub/.mcp.json",
		"rename nested":       "mv sub/.claude sub/.c2 && mkdir -p sub/.claude && echo pwned > sub/.claude/settings.json",
		"deeper opencode":     "mkdir -p sub/deeper/.opencode/agent && echo pwned > sub/deeper/.opencode/agent/h.md",
		"vscode":              "mkdir -p .vscode && echo '{}' > .vscode/settings.json",
		"idea":                "mkdir -p .idea && echo x > .idea/workspace.xml",
		"cursor mcp":          "mkdir -p .cursor && echo '{}' > .cursor/mcp.json",
		"zed settings":        "mkdir -p .zed && echo '{}' > .zed/settings.json",
		"devcontainer":        "mkdir -p .devcontainer && echo '{}' > .devcontainer/devcontainer.json",
		"kiro mcp":            "mkdir -p .kiro/settings && echo '{}' > .kiro/settings/mcp.json",
		"crush json":          "echo '{}' > .crush.json",
		"ripgreprc":           "echo --pre=/tmp/x > .ripgreprc",
		"workspace gitconfig": "echo '[core]' > .gitconfig",
		"bashrc":              "echo pwned > .bashrc",
		"profile":             "echo pwned > .profile",
	}
	for name, script := range attempts {
		t.Run(name, func(t *testing.T) {
			if out := w.run(t, script+" && echo ESCAPED"); strings.Contains(out, "ESCAPED") {
				t.Errorf("%q succeeded inside the sandbox:\n%s", script, out)
			}
		})
	}
	for _, n := range []string{".gemini", ".opencode", ".codex", ".vscode", ".idea", ".cursor", ".zed", ".devcontainer", ".kiro", ".crush.json",
		".ripgreprc", ".gitconfig", ".bashrc", ".profile",
		"sub/.claude/skills", "sub/deeper/.opencode/agent"} {
		if _, err := os.Lstat(filepath.Join(w.ws, n)); err == nil {
			t.Errorf("%s is left in the workspace", n)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(w.ws, "sub", ".claude", "settings.json")); string(b) != "{}\n" {
		t.Errorf("sub/.claude/settings.json was changed: %q", b)
	}
	out := w.run(t, fmt.Sprintf("cat %s/mcp-auth/*.json %s/file-history/s/*; grep -r TOPSECRET %s", keelHome, keelHome, keelHome))
	if strings.Contains(out, "TOPSECRET") {
		t.Errorf("keel's MCP tokens or file history were read inside the sandbox:\n%s", out)
	}
	// One a command makes where none was (no placeholder stands in every directory) is moved
	// aside as it is released (TestMadeConfigMovedAside): the next command cannot write it.
	w.run(t, "mkdir -p sub2/.keel && echo one > sub2/.keel/a")
	if out := w.run(t, "echo two > sub2/.keel/b && echo ESCAPED"); strings.Contains(out, "ESCAPED") {
		t.Errorf("sub2/.keel, made by the command before, is still writable:\n%s", out)
	}
	// The rest of the tree is the command's.
	if out := w.run(t, fmt.Sprintf("mkdir -p sub/src && echo ok > sub/src/x && echo ok > CLAUDE.md && cat sub/src/x && echo more >> %s/x && cat %s/x", cache, cache)); !strings.Contains(out, "ok\ncached\nmore") {
		t.Errorf("an ordinary write below the workspace failed:\n%s", out)
	}
}
