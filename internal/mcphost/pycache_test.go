package mcphost

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/keel-dev/keel/internal/hostexec"
	"github.com/keel-dev/keel/internal/mcphost/mcptest"
)

// TestStdioServerPythonCache: a stdio server keel starts outside the sandbox gets the
// bytecode cache a sandbox set ([hostexec.PythonCache]) as PYTHONPYCACHEPREFIX, so that a
// `python3 -m pkg.mod` server never runs a .pyc a sandboxed command planted in pkg/__pycache__.
func TestStdioServerPythonCache(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "pycache")
	hostexec.PythonCache(cache) // as sandbox.New does, for the rest of the process
	seen := filepath.Join(t.TempDir(), "seen")
	cmd, args, env := mcptest.Command(mcptest.ModeTrace)
	srv := ServerConfig{Name: "py", Type: TypeStdio, Command: "sh", Env: env, Scope: ScopeUser,
		Args: append([]string{"-c", `printf '%s' "$PYTHONPYCACHEPREFIX" > "$0"; exec "$@"`, seen, cmd}, args...)}
	m := start(t, Options{Servers: []ServerConfig{srv}, Environ: []string{"PATH=" + os.Getenv("PATH"), "PYTHONPYCACHEPREFIX=.pyc"}})
	if _, ok := m.Lookup("mcp__py__trace"); !ok {
		t.Fatalf("the server did not start: %+v", m.Status())
	}
	if b, err := os.ReadFile(seen); err != nil || string(b) != cache {
		t.Errorf("the server's PYTHONPYCACHEPREFIX = %q (%v), want %s", b, err, cache)
	}
}
