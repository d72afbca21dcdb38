package session

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/mcphost/mcptest"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

// TestPythonModuleServerSafePath: stdio servers Python runs as an installed module with
// options before -m (`python3 -W ignore -m MOD`), or behind env (`env VAR=1 python3 -X utf8
// -m MOD`), start without the working directory on sys.path: a datetime.py a sandboxed command
// or the repository put there is not what the module's `import datetime` runs, outside the
// sandbox. Python 3.11 or later (PYTHONSAFEPATH).
func TestPythonModuleServerSafePath(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	if out, err := exec.Command(python, "-c", "import sys; print(sys.version_info >= (3, 11))").Output(); err != nil || strings.TrimSpace(string(out)) != "True" {
		t.Skip("python3 before 3.11 has no PYTHONSAFEPATH")
	}
	ws, site, marks := t.TempDir(), t.TempDir(), t.TempDir()
	mark := filepath.Join(marks, "shadowed")
	// The installed module: imports datetime, then serves MCP.
	writeFiles(t, site, map[string]string{
		"keelsrv.py": "import datetime, os\nexe = os.environ['KEEL_TEST_EXE']\nos.execv(exe, [exe, '-test.run=^$'])\n",
	})
	writeFiles(t, ws, map[string]string{
		"datetime.py": "open(" + pyString(mark) + ", 'w').write('x')\n",
	})
	exe, _, env := mcptest.Command(mcptest.ModeEverything)
	env["KEEL_TEST_EXE"], env["PYTHONPATH"] = exe, site
	cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"pyw":   map[string]any{"command": "python3", "args": []string{"-W", "ignore", "-m", "keelsrv"}, "env": env},
		"pyenv": map[string]any{"command": "env", "args": []string{"PYTHONUNBUFFERED=1", "python3", "-X", "utf8", "-m", "keelsrv"}, "env": env},
	}})
	if err != nil {
		t.Fatal(err)
	}
	sc := &scripted.Scenario{Rules: []scripted.Rule{{Reply: []scripted.Block{scripted.Text("done")}}}}
	h := newHarness(t, sc, Options{Cwd: ws, Trust: true, Sandbox: "off", MCP: MCPOptions{Configs: []string{string(cfg)}}})
	result(t, h.send(t, "hi"))
	tools := toolNames(t, h.srv.Requests()[0].Body)
	for _, name := range []string{"mcp__pyw__echo", "mcp__pyenv__echo"} {
		if !has(tools, name) {
			t.Errorf("%s is not offered: the server did not start: %+v", name, h.sess.MCP().Status())
		}
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("the datetime.py in the working directory ran in a server's Python, outside the sandbox")
	}
}

// pyString is s as a Python string literal.
func pyString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
