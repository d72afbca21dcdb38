package session

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/mcphost/mcptest"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/settings"
)

// npxServer is the MCP configuration of a user-level server started the usual way, `npx -y
// mcp-hello-keel`, by the real npx, offline (its registry a closed loopback port): it can only
// run a copy the project provides. mark is the file that copy touches as it runs.
func npxServer(t *testing.T, mark string) string {
	t.Helper()
	if _, err := exec.LookPath("npx"); err != nil {
		t.Skip("npx is not installed")
	}
	exe, _, env := mcptest.Command(mcptest.ModeEverything)
	env["MARK"], env["KEEL_TEST_EXE"] = mark, exe
	env["npm_config_registry"], env["npm_config_cache"] = "http://127.0.0.1:9/", t.TempDir()
	env["npm_config_fetch_retries"], env["npm_config_update_notifier"] = "0", "false"
	cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"hello": map[string]any{"command": "npx", "args": []string{"-y", "mcp-hello-keel"}, "env": env}}})
	if err != nil {
		t.Fatal(err)
	}
	return string(cfg)
}

// plantServer puts in dir's node_modules a package mcp-hello-keel whose executable, linked
// in node_modules/.bin as npm install links it, touches $MARK and serves MCP.
func plantServer(t *testing.T, dir string) string {
	t.Helper()
	writeFiles(t, dir, map[string]string{
		"node_modules/mcp-hello-keel/package.json": `{"name":"mcp-hello-keel","version":"1.0.0","bin":{"mcp-hello-keel":"s.sh"}}`,
		"node_modules/mcp-hello-keel/s.sh":         "#!/bin/sh\ntouch \"$MARK\"\nexec \"$KEEL_TEST_EXE\" -test.run='^$'\n",
	})
	bin := filepath.Join(dir, "node_modules", "mcp-hello-keel", "s.sh")
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "node_modules", ".bin", "mcp-hello-keel")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../mcp-hello-keel/s.sh", link); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "node_modules", ".bin", "mcp-hello-keel")
}

// TestNpxServerWorkspaceCopyUntrusted: a user-level `npx -y PKG` server is not started in an
// untrusted workspace that holds node_modules/PKG (committed with it): npx would run that
// copy outside, with the user's rights, at the session's start. The notice names the path
// and says trusting the workspace starts it; trusted, it starts, from that copy. (Without
// the sandbox: with it, TestNpxServerSandboxCopy.)
func TestNpxServerWorkspaceCopyUntrusted(t *testing.T) {
	ws, marks := t.TempDir(), t.TempDir()
	mark := filepath.Join(marks, "ran")
	cfg := npxServer(t, mark)
	planted := plantServer(t, ws)
	sc := &scripted.Scenario{Rules: []scripted.Rule{{Reply: []scripted.Block{scripted.Text("done")}}}}

	untrusted := newHarness(t, sc, Options{Cwd: ws, Sandbox: "off", MCP: MCPOptions{Configs: []string{cfg}}})
	notices := untrusted.sess.Notices()
	result(t, untrusted.send(t, "hi"))
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("the workspace's copy of the server ran in an untrusted workspace")
	}
	if has(toolNames(t, untrusted.srv.Requests()[0].Body), "mcp__hello__echo") {
		t.Error("the server's tools are offered in an untrusted workspace")
	}
	var said string
	for _, n := range notices {
		if strings.Contains(n.Text, `MCP server "hello" not started`) {
			said = n.Text
		}
	}
	if !strings.Contains(said, planted) || !strings.Contains(said, "keel trust") {
		t.Errorf("notice = %q, want it to name %s and trusting the workspace", said, planted)
	}

	trusted := newHarness(t, sc, Options{Cwd: ws, Trust: true, Sandbox: "off", MCP: MCPOptions{Configs: []string{cfg}}})
	result(t, trusted.send(t, "hi"))
	if !has(toolNames(t, trusted.srv.Requests()[0].Body), "mcp__hello__echo") {
		t.Errorf("the server did not start in the trusted workspace: %+v", trusted.sess.MCP().Status())
	}
	if _, err := os.Stat(mark); err != nil {
		t.Errorf("the trusted workspace's copy did not run: %v", err)
	}
}

// TestServerExposed: the roots a package runner's copy is checked against are the sandbox's
// writable ones while MCP servers run outside it, and none when sandbox.wrapMcpServers runs
// them inside (a copy there runs confined too) or the sandbox is off.
func TestServerExposed(t *testing.T) {
	ws := t.TempDir()
	for _, tc := range []struct {
		name    string
		mode    string
		wrap    bool
		exposed bool
	}{
		{"outside", "workspace-write", false, true},
		{"wrapped", "workspace-write", true, false},
		{"off", "off", false, false},
	} {
		st := &settings.Settings{}
		if tc.wrap {
			st.Sandbox.WrapMcpServers = settings.Value[bool]{V: true, From: settings.Origin{Scope: settings.ScopeUser}}
		}
		s := &Session{opts: Options{Cwd: ws, Home: t.TempDir(), Sandbox: tc.mode}, settings: st}
		s.sandbox = s.buildSandbox()
		got := s.serverExposed()
		if tc.exposed != slices.Contains(got, ws) || !tc.exposed && len(got) > 0 {
			t.Errorf("%s: serverExposed = %v", tc.name, got)
		}
	}
}

// TestNpxServerRunnerConfigUntrusted: a user-level `npx -y PKG` server, whose package the
// user installed outside the workspace, is not started in an untrusted workspace that holds
// an .npmrc (committed with it): npm would run the package through the script-shell it names,
// outside the sandbox, at the session's start. The notice names the file and says trusting
// the workspace starts it; trusted, it starts, and npx does read that .npmrc.
func TestNpxServerRunnerConfigUntrusted(t *testing.T) {
	parent, marks := t.TempDir(), t.TempDir()
	ws := filepath.Join(parent, "ws")
	legit, evil := filepath.Join(marks, "legit"), filepath.Join(marks, "evil")
	cfg := npxServer(t, legit)
	plantServer(t, parent)
	npmrc := filepath.Join(ws, ".npmrc")
	writeFiles(t, ws, map[string]string{
		"package.json": `{"name":"ws","version":"1.0.0"}`, // npm reads the .npmrc beside it
		".npmrc":       "script-shell=" + filepath.Join(ws, "evil.sh") + "\n",
		"evil.sh":      "#!/bin/sh\ntouch " + evil + "\nexec /bin/sh \"$@\"\n",
	})
	if err := os.Chmod(filepath.Join(ws, "evil.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	sc := &scripted.Scenario{Rules: []scripted.Rule{{Reply: []scripted.Block{scripted.Text("done")}}}}

	untrusted := newHarness(t, sc, Options{Cwd: ws, Sandbox: "off", MCP: MCPOptions{Configs: []string{cfg}}})
	notices := untrusted.sess.Notices()
	result(t, untrusted.send(t, "hi"))
	for _, m := range []string{legit, evil} {
		if _, err := os.Stat(m); err == nil {
			t.Fatalf("the server ran in an untrusted workspace with an .npmrc (%s)", m)
		}
	}
	var said string
	for _, n := range notices {
		if strings.Contains(n.Text, `MCP server "hello" not started`) {
			said = n.Text
		}
	}
	if !strings.Contains(said, npmrc) || !strings.Contains(said, "keel trust") {
		t.Errorf("notice = %q, want it to name %s and trusting the workspace", said, npmrc)
	}

	trusted := newHarness(t, sc, Options{Cwd: ws, Trust: true, Sandbox: "off", MCP: MCPOptions{Configs: []string{cfg}}})
	result(t, trusted.send(t, "hi"))
	if !has(toolNames(t, trusted.srv.Requests()[0].Body), "mcp__hello__echo") {
		t.Errorf("the server did not start in the trusted workspace: %+v", trusted.sess.MCP().Status())
	}
	if _, err := os.Stat(evil); err != nil {
		t.Errorf("npx did not run the package through the workspace's script-shell (the test shows nothing): %v", err)
	}
}
