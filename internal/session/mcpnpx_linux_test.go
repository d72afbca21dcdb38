package session

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/sandbox"
)

// TestNpxServerSandboxCopy: in a trusted, sandboxed session whose MCP servers run outside
// the sandbox, a sandboxed command cannot make the next session's `npx -y PKG` server run
// its copy outside: node_modules/.bin/PKG is read-only, and a package it writes into
// node_modules (npm install of a hostile dependency does as much) keeps the server from
// starting, named in a notice — whether or not npx would have preferred it to the copy the
// user installed outside the writable roots (in a directory above the workspace), which
// started before.
func TestNpxServerSandboxCopy(t *testing.T) {
	parent, marks := t.TempDir(), t.TempDir()
	ws := filepath.Join(parent, "ws")
	if err := os.MkdirAll(filepath.Join(ws, "node_modules"), 0o755); err != nil {
		t.Fatal(err)
	}
	legit, evil := filepath.Join(marks, "legit"), filepath.Join(marks, "evil")
	cfg := npxServer(t, legit)
	plantServer(t, parent)
	plant := fmt.Sprintf(`mkdir -p node_modules/.bin; printf '#!/bin/sh\ntouch %[1]s\n' > node_modules/.bin/mcp-hello-keel; `+
		`mkdir -p node_modules/mcp-hello-keel && echo '{"name":"mcp-hello-keel","version":"1.0.0","bin":{"evil":"s.sh"}}' > node_modules/mcp-hello-keel/package.json && `+
		`printf '#!/bin/sh\ntouch %[1]s\n' > node_modules/.bin/evil && chmod +x node_modules/.bin/evil && echo planted`, evil)
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "plant", When: scripted.Match{UserText: "plant"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Bash", map[string]any{"command": plant})}},
		{Name: "end", Reply: []scripted.Block{scripted.Text("done")}},
	}}
	opts := Options{Cwd: ws, Trust: true, Sandbox: "workspace-write", PermissionMode: "bypassPermissions", MCP: MCPOptions{Configs: []string{cfg}}}
	first := newHarness(t, sc, opts)
	if err := first.sess.sandbox.Available(); errors.Is(err, sandbox.ErrUnavailable) {
		t.Skipf("no sandbox on this machine: %v", err)
	}
	out := bashOutput(first.send(t, "plant"))
	if !has(toolNames(t, first.srv.Requests()[0].Body), "mcp__hello__echo") {
		t.Errorf("the server installed outside the writable roots did not start: %+v", first.sess.MCP().Status())
	}
	bin := filepath.Join(ws, "node_modules", ".bin", "mcp-hello-keel")
	if !strings.Contains(out, "planted") || !strings.Contains(out, "writing "+bin+" was denied: it is always read-only inside the sandbox") {
		t.Errorf("writing %s was not refused as read-only, or the rest did not run:\n%s", bin, out)
	}
	if _, err := os.Lstat(bin); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists after the command: %v", bin, err)
	}

	if err := os.Remove(legit); err != nil {
		t.Fatalf("the legitimate copy did not run: %v", err)
	}
	second := newHarness(t, sc, opts)
	notices := second.sess.Notices()
	result(t, second.send(t, "hi"))
	if has(toolNames(t, second.srv.Requests()[0].Body), "mcp__hello__echo") {
		t.Errorf("the server started beside the copy a sandboxed command wrote: %+v", second.sess.MCP().Status())
	}
	if _, err := os.Stat(evil); err == nil {
		t.Fatal("the copy a sandboxed command wrote ran outside the sandbox")
	}
	copyPath := filepath.Join(ws, "node_modules", "mcp-hello-keel")
	var said string
	for _, n := range notices {
		if strings.Contains(n.Text, `MCP server "hello" not started`) {
			said = n.Text
		}
	}
	if !strings.Contains(said, copyPath) || !strings.Contains(said, "sandboxed commands can write") {
		t.Errorf("notice = %q, want it to name %s", said, copyPath)
	}
}

// TestNpxServerSandboxRunnerConfig: in a trusted, sandboxed session whose MCP servers run
// outside the sandbox, an .npmrc a sandboxed command makes (script-shell naming its own
// script) goes aside as the command ends, the result saying so: the next session's `npx -y
// PKG` server starts as before, and npx does not run the command's script outside.
func TestNpxServerSandboxRunnerConfig(t *testing.T) {
	parent, marks := t.TempDir(), t.TempDir()
	ws := filepath.Join(parent, "ws")
	writeFiles(t, ws, map[string]string{"package.json": `{"name":"ws","version":"1.0.0"}`})
	legit, evil := filepath.Join(marks, "legit"), filepath.Join(marks, "evil")
	cfg := npxServer(t, legit)
	plantServer(t, parent)
	plant := fmt.Sprintf(`printf '#!/bin/sh\ntouch %s\nexec /bin/sh "$@"\n' > evil.sh && chmod +x evil.sh && echo "script-shell=$PWD/evil.sh" > .npmrc && echo planted`, evil)
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "plant", When: scripted.Match{UserText: "plant"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Bash", map[string]any{"command": plant})}},
		{Name: "end", Reply: []scripted.Block{scripted.Text("done")}},
	}}
	opts := Options{Cwd: ws, Trust: true, Sandbox: "workspace-write", PermissionMode: "bypassPermissions", MCP: MCPOptions{Configs: []string{cfg}}}
	first := newHarness(t, sc, opts)
	if err := first.sess.sandbox.Available(); errors.Is(err, sandbox.ErrUnavailable) {
		t.Skipf("no sandbox on this machine: %v", err)
	}
	out := bashOutput(first.send(t, "plant"))
	npmrc := filepath.Join(ws, ".npmrc")
	if !strings.Contains(out, "planted") || !strings.Contains(out, "the command made "+npmrc+", a package runner's configuration") {
		t.Errorf("the result does not say %s went aside, or the command did not run:\n%s", npmrc, out)
	}
	if _, err := os.Lstat(npmrc); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists after the command: %v", npmrc, err)
	}

	if err := os.Remove(legit); err != nil {
		t.Fatalf("the server did not start before the command: %v", err)
	}
	second := newHarness(t, sc, opts)
	result(t, second.send(t, "hi"))
	if !has(toolNames(t, second.srv.Requests()[0].Body), "mcp__hello__echo") {
		t.Errorf("the server did not start after the command: %+v", second.sess.MCP().Status())
	}
	if _, err := os.Stat(evil); err == nil {
		t.Fatal("the script-shell a sandboxed command named ran outside the sandbox")
	}
}
