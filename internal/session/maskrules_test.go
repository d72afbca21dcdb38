package session

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

// TestDenyReadHidesFromTheTools: a path sandbox.filesystem.denyRead names — and no permission
// rule — is refused to the model's own Read and left out of Grep and Glob, whatever the mode
// and with the sandbox off too; the refusal names the setting, and allowRead within it stays
// readable, as for commands.
func TestDenyReadHidesFromTheTools(t *testing.T) {
	for _, c := range []struct{ mode, sandbox string }{{"default", "off"}, {"bypassPermissions", "off"}, {"default", "auto"}} {
		cwd := t.TempDir()
		writeTree(t, cwd, map[string]string{
			"secrets/k.txt": "TOPSECRET-123", "secrets/public/p.txt": "TOPSECRET-PUBLIC", "src/a.go": "package a // TOPSECRET-SAFE",
		})
		settings := `{"sandbox":{"filesystem":{"denyRead":["` + filepath.Join(cwd, "secrets") + `"],"allowRead":["secrets/public"]}}}`
		h := newHarness(t, calls(
			scripted.ToolUse("Read", map[string]any{"file_path": filepath.Join(cwd, "secrets", "k.txt")}),
			scripted.ToolUse("Grep", map[string]any{"pattern": "TOPSECRET", "path": cwd, "output_mode": "content"}),
			scripted.ToolUse("Glob", map[string]any{"pattern": "**/*.txt"}),
			scripted.ToolUse("Read", map[string]any{"file_path": "secrets/public/p.txt"}),
		), Options{Cwd: cwd, PermissionMode: c.mode, Sandbox: c.sandbox, SettingsArgs: []string{settings}})
		got := toolEndTexts(h.send(t, "go"))
		where := c.mode + ", sandbox " + c.sandbox
		reads := strings.Join(got["Read"], "\n")
		if strings.Contains(reads, "TOPSECRET-123") || !strings.Contains(reads, "sandbox.filesystem.denyRead") {
			t.Errorf("%s: Read of the masked file = %q; want a refusal naming the setting", where, reads)
		}
		for _, name := range []string{"Grep", "Glob"} {
			if text := strings.Join(got[name], "\n"); strings.Contains(text, "k.txt") || text == "" {
				t.Errorf("%s: %s listed the masked file (or nothing):\n%s", where, name, text)
			}
		}
		for name, want := range map[string][]string{"Read": {"TOPSECRET-PUBLIC"}, "Grep": {"TOPSECRET-SAFE", "TOPSECRET-PUBLIC"}, "Glob": {"p.txt"}} {
			for _, w := range want {
				if text := strings.Join(got[name], "\n"); !strings.Contains(text, w) {
					t.Errorf("%s: %s lacks %q — what the mask leaves readable was hidden:\n%s", where, name, w, text)
				}
			}
		}
	}
}

// toolEndTexts are the texts of the main thread's tool results among events, by tool.
func toolEndTexts(events []event.Event) map[string][]string {
	out := map[string][]string{}
	var text func(bs []message.Block) string
	text = func(bs []message.Block) string {
		var b strings.Builder
		for _, x := range bs {
			b.WriteString(x.Text + text(x.Content))
		}
		return b.String()
	}
	for _, e := range events {
		if r, ok := e.(event.ToolEnd); ok && r.Origin.AgentID == "" {
			out[r.Name] = append(out[r.Name], text(r.Result))
		}
	}
	return out
}

// TestKeelsCredentialsHiddenFromTheTools: keel's MCP OAuth tokens (mcp-auth/ in keel's home),
// which the sandbox masks from commands whatever the settings say, are refused to the model's
// Read and left out of Grep even where every read is allowed (adversary11 #25).
func TestKeelsCredentialsHiddenFromTheTools(t *testing.T) {
	cwd, home := t.TempDir(), t.TempDir()
	writeTree(t, home, map[string]string{"mcp-auth/srv.json": `{"access_token":"KEEL-TOKEN-11"}`})
	token := filepath.Join(home, "mcp-auth", "srv.json")
	h := newHarness(t, calls(
		scripted.ToolUse("Read", map[string]any{"file_path": token}),
		scripted.ToolUse("Grep", map[string]any{"pattern": "KEEL-TOKEN", "path": home, "output_mode": "content"}),
	), Options{Cwd: cwd, Home: home, PermissionMode: "bypassPermissions", Sandbox: "off"})
	got := toolEndTexts(h.send(t, "go"))
	if reads := strings.Join(got["Read"], "\n"); strings.Contains(reads, "KEEL-TOKEN-11") || !strings.Contains(reads, keelHomeSource) {
		t.Errorf("Read of keel's MCP token = %q; want a refusal naming why", reads)
	}
	if greps := strings.Join(got["Grep"], "\n"); strings.Contains(greps, "KEEL-TOKEN-11") {
		t.Errorf("Grep showed keel's MCP token:\n%s", greps)
	}
}
