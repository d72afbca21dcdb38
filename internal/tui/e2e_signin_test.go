package tui_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/mcphost/mcptest"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/waittest"
)

// browserScript is a $BROWSER that writes each address it is given as a line of log.
func browserScript(t *testing.T) (script, log string) {
	t.Helper()
	dir := t.TempDir()
	log = filepath.Join(dir, "opened.txt")
	script = filepath.Join(dir, "browser.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nprintf '%s\\n' \"$1\" >> '"+log+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return script, log
}

// nthOpened waits until the browser was given n addresses and returns the nth.
func nthOpened(t *testing.T, log string, n int) string {
	t.Helper()
	var lines []string
	waittest.Until(t, fmt.Sprintf("address %d in the browser", n), func() bool {
		f, err := os.Open(log)
		if err != nil {
			return false
		}
		defer f.Close()
		lines = lines[:0]
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		return len(lines) >= n
	})
	return lines[n-1]
}

// signInAt plays the user in the browser: the authorization server grants at once and
// redirects to keel's loopback listener, which finishes the sign-in.
func signInAt(t *testing.T, page string) {
	t.Helper()
	req, err := http.NewRequestWithContext(waittest.Context(t), http.MethodGet, page, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "authorization complete") {
		t.Fatalf("sign-in page: %s: %s", resp.Status, body)
	}
}

// TestE2EOAuthSignInAndStepUp: the real binary signs in to an OAuth-protected MCP server
// from inside the terminal UI — the page is opened with $BROWSER and its address shown, the
// server connects when the browser comes back — and a call refused for insufficient scope
// sends the user to sign in again, with the wider scope, and then goes through; /mcp login
// signs in once more.
func TestE2EOAuthSignInAndStepUp(t *testing.T) {
	as := mcptest.NewAuthServer(t)
	url := mcptest.ProtectedHTTP(t, mcptest.New().Server, as, mcptest.Resource{ToolScopes: map[string][]string{"echo": {"files:write"}}})
	srv := startScripted(t,
		scripted.Rule{When: scripted.Match{UserText: "echo it"}, Reply: []scripted.Block{scripted.ToolUse("mcp__t__echo", map[string]any{"text": "scoped hello"})}},
		scripted.Rule{When: scripted.Match{ToolResult: "mcp__t__echo"}, Reply: []scripted.Block{scripted.Text("The server echoed it.")}},
	)
	script, log := browserScript(t)
	cfg := `{"mcpServers":{"t":{"type":"http","url":"` + url + `"}}}`
	tm := startKeelEnv(t, srv, t.TempDir(), 100, 32, []string{"BROWSER=" + script}, "--mcp-config", cfg, "--allowedTools", "mcp__t__echo")
	tm.waitFor("t (MCP server) asks you to sign in")
	tm.waitFor("Opened in your browser")
	first := nthOpened(t, log, 1)
	if !strings.HasPrefix(first, as.URL+"/authorize?") {
		t.Fatalf("opened %q, want the authorization page", first)
	}
	signInAt(t, first)
	tm.waitFor("t: signed in, connected")

	tm.typeText("echo it")
	tm.keys("Enter")
	second := nthOpened(t, log, 2)
	if !strings.Contains(second, "files%3Awrite") {
		t.Errorf("step-up page %q does not ask for files:write", second)
	}
	signInAt(t, second)
	tm.waitFor("The server echoed it.")
	grants := as.Grants()
	if len(grants) != 2 || !strings.Contains(strings.Join(grants[1].Scopes, " "), "files:write") {
		t.Errorf("grants = %+v, want a second one with files:write", grants)
	}

	// /mcp login signs in anew, asking for every scope the server wanted.
	tm.typeText("/mcp login t")
	tm.keys("Enter")
	third := nthOpened(t, log, 3)
	if !strings.Contains(third, "files%3Awrite") {
		t.Errorf("login page %q does not keep files:write", third)
	}
	signInAt(t, third)
	tm.waitFor("signed in to t")
	if n := as.Counts().Authorizations; n != 3 {
		t.Errorf("authorizations = %d, want 3 (one per sign-in)", n)
	}
}
