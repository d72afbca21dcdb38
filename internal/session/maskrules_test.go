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
