package mcphost

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// npmServer returns a stdio config running a reference server installed by scripts/test.sh.
func npmServer(t testing.TB, name, pkg string, args ...string) ServerConfig {
	t.Helper()
	cache := os.Getenv("KEEL_NPM_CACHE")
	if cache == "" {
		t.Skip("KEEL_NPM_CACHE is unset: run scripts/test.sh (make test) to install the MCP reference servers from npm")
	}
	entry := filepath.Join(cache, "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		t.Fatalf("reference server %s not installed under KEEL_NPM_CACHE: %v", pkg, err)
	}
	return ServerConfig{Name: name, Type: TypeStdio, Command: "node", Args: append([]string{entry}, args...), Scope: ScopeUser}
}

// TestReferenceServers connects the npm reference servers over stdio and calls a tool on each.
func TestReferenceServers(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "hello.txt"), "hello from keel\n")
	m := start(t, Options{Environ: os.Environ(), Roots: []string{dir}, Servers: []ServerConfig{
		npmServer(t, "everything", "server-everything", "stdio"),
		npmServer(t, "filesystem", "server-filesystem", dir),
	}})
	for _, s := range m.Status() {
		if s.Status != StatusConnected || s.Tools == 0 {
			t.Errorf("%s: %+v", s.Name, s)
		}
	}
	if res := call(t, m, "mcp__everything__echo", `{"message":"ping"}`); res.IsError || !strings.Contains(res.ResultText(), "ping") {
		t.Errorf("everything echo = %+v", res)
	}
	in := `{"path":"` + filepath.Join(dir, "hello.txt") + `"}`
	if res := call(t, m, "mcp__filesystem__read_text_file", in); res.IsError || !strings.Contains(res.ResultText(), "hello from keel") {
		t.Errorf("filesystem read = %+v", res)
	}
	if tl, _ := m.Lookup("mcp__filesystem__read_text_file"); !tl.ReadOnly(nil) {
		t.Error("read_text_file carries readOnlyHint")
	}
}
