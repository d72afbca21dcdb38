package session

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/lsp/lsptest"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/sandbox"
	"github.com/keel-dev/keel/internal/waittest"
)

// TestLanguageServersInSandbox: a language server — here a script that, as a workspace's
// planted node_modules/typescript/lib/tsserver.js would, writes outside every writable root
// before it serves — runs inside the session's sandbox by default: its write outside is
// refused, its write in the project lands (without keel's credentials in its environment),
// and its diagnostics still come back with the edit. With sandbox.wrapLspServers false in the user's settings it runs outside as before,
// and the session says so.
func TestLanguageServersInSandbox(t *testing.T) {
	for _, wrap := range []bool{true, false} {
		t.Run(fmt.Sprintf("wrap=%v", wrap), func(t *testing.T) {
			proj, home := t.TempDir(), t.TempDir()
			wd, _ := os.Getwd()
			outside, err := os.MkdirTemp(wd, ".sandbox-test-") // not under the private /tmp
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(outside) })
			escaped, inside := filepath.Join(outside, "escaped"), filepath.Join(proj, "server-ran")
			exe, args, env := lsptest.Command(lsptest.ModeMarkers)
			script := fmt.Sprintf("#!/bin/sh\ntouch %s\nenv > %s\nexec %s %s\n", escaped, inside, exe, strings.Join(args, " "))
			writeFiles(t, proj, map[string]string{"server.sh": script, "a.src": "fine\n"})
			if err := os.Chmod(filepath.Join(proj, "server.sh"), 0o755); err != nil {
				t.Fatal(err)
			}
			sb := `{"enabled": true}`
			if !wrap {
				sb = `{"enabled": true, "wrapLspServers": false}`
			}
			settingsJSON := fmt.Sprintf(`{"sandbox": %s, "lspServers": {"fake": {"command": %q, "env": {%q: %q},
				"extensionToLanguage": {".src": "fake"}}}}`, sb, filepath.Join(proj, "server.sh"), lsptest.ChildEnv, env[lsptest.ChildEnv])
			if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(settingsJSON), 0o600); err != nil {
				t.Fatal(err)
			}
			sc := &scripted.Scenario{Rules: []scripted.Rule{
				{Name: "read", When: scripted.Match{UserText: "fix it"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Read", map[string]string{"file_path": "a.src"})}},
				{Name: "edit", When: scripted.Match{ToolResult: "Read"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Edit",
					map[string]string{"file_path": "a.src", "old_string": "fine", "new_string": "BROKEN here"})}},
				{Name: "done", When: scripted.Match{ToolResult: "Edit"}, Reply: []scripted.Block{scripted.Text("done")}},
			}}
			h := newHarness(t, sc, Options{Cwd: proj, Home: home, PermissionMode: "acceptEdits", LSPWait: waittest.Timeout(),
				MCP: MCPOptions{Environ: append(os.Environ(), "ANTHROPIC_API_KEY=sk-test-secret")}})
			if h.sess.sandbox == nil {
				t.Fatal("the sandbox is off")
			}
			if err := h.sess.sandbox.Available(); errors.Is(err, sandbox.ErrUnavailable) {
				t.Skipf("no sandbox on this machine: %v", err)
			}
			events := h.send(t, "fix it")
			if got := editResult(t, h.sess.History(), "Edit"); !strings.Contains(got, "broken: BROKEN here") {
				t.Errorf("the Edit's result has no diagnostics from the server:\n%s", got)
			}
			if env, err := os.ReadFile(inside); err != nil {
				t.Errorf("the server did not run: %v", err)
			} else if strings.Contains(string(env), "sk-test-secret") {
				t.Error("keel's API key is in the language server's environment")
			}
			_, err = os.Stat(escaped)
			if wrap && err == nil {
				t.Error("the language server wrote outside the writable roots: it ran outside the sandbox")
			}
			if !wrap && err != nil {
				t.Errorf("with sandbox.wrapLspServers false the server did not run as written: %v", err)
			}
			said := false
			for _, e := range events {
				if n, ok := e.(event.Notice); ok && strings.Contains(n.Text, "Sandbox: language servers run outside the sandbox (sandbox.wrapLspServers is false)") {
					said = true
				}
			}
			if f, _ := h.sess.lspFinding(h.sess.sandbox); said == wrap || (f.Status == "warn") == wrap || !strings.Contains(f.Detail, "fake") {
				t.Errorf("wrap %v: the session's notice said %v, doctor's finding %+v", wrap, said, f)
			}
		})
	}
}
