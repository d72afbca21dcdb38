package session

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/sandbox"
)

// forgePyc writes, for tools/__init__.py and tools/lint.py of the working directory, the
// .pyc CPython would take for each: a header carrying the source's modification time and
// size, then code of its own that appends the module's name to the file argv[1] names.
const forgePyc = `import importlib.util, marshal, os, sys
for name in ("__init__", "lint"):
    src = os.path.join("tools", name + ".py")
    st = os.stat(src)
    code = compile("open(%r, 'a').write(%r)\nprint('lint forged')\n" % (sys.argv[1], name + "\n"), src, "exec")
    pyc = os.path.join("tools", "__pycache__", name + "." + sys.implementation.cache_tag + ".pyc")
    os.makedirs(os.path.dirname(pyc), exist_ok=True)
    with open(pyc, "wb") as f:
        f.write(importlib.util.MAGIC_NUMBER + (0).to_bytes(4, "little") + (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little") + (st.st_size & 0xFFFFFFFF).to_bytes(4, "little") + marshal.dumps(code))
`

// TestSandboxPythonHookBytecode: a hook runs `python3 -m tools.lint` outside the sandbox, and
// a sandboxed command cannot have it run bytecode of its own: tools/__pycache__ is read-only
// inside like tools/lint.py, and a forged .pyc already there (written before keel protected
// it) is not what the hook runs, since Python keeps the cache of what keel runs outside in
// keel's directory.
func TestSandboxPythonHookBytecode(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	proj, home, marks := t.TempDir(), t.TempDir(), t.TempDir()
	writeFiles(t, proj, map[string]string{"tools/__init__.py": "", "tools/lint.py": "print('lint real')\n"})
	log, mark := filepath.Join(marks, "log"), filepath.Join(marks, "forged")
	hook := fmt.Sprintf(`cd "$CLAUDE_PROJECT_DIR" && python3 -m tools.lint >> %s 2>&1`, log)
	settingsJSON := fmt.Sprintf(`{"permissions": {"allow": ["Bash"]}, "sandbox": {"enabled": true},
		"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": %q}]}]}}`, hook)
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(settingsJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	plant := fmt.Sprintf("python3 - %s <<'EOF'\n%sEOF\necho planted", mark, forgePyc)
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "plant", When: scripted.Match{UserText: "plant"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Bash", map[string]any{"command": plant})}},
		{Name: "again", When: scripted.Match{UserText: "again"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Bash", map[string]any{"command": "echo second"})}},
		{Name: "end", Reply: []scripted.Block{scripted.Text("done")}},
	}}
	h := newHarness(t, sc, Options{Cwd: proj, Home: home})
	if h.sess.sandbox == nil {
		t.Fatal("the sandbox is off")
	}
	if err := h.sess.sandbox.Available(); errors.Is(err, sandbox.ErrUnavailable) {
		t.Skipf("no sandbox on this machine: %v", err)
	}
	ran := func(step string, times int) {
		t.Helper()
		b, _ := os.ReadFile(log)
		if got := strings.Count(string(b), "lint real"); got != times {
			t.Errorf("%s: the hook ran the real module %d times, want %d; its log:\n%s", step, got, times, b)
		}
		if b, err := os.ReadFile(mark); err == nil {
			t.Fatalf("%s: the hook ran bytecode a command forged, outside the sandbox: %q", step, b)
		}
	}
	out := bashOutput(h.send(t, "plant"))
	if !strings.Contains(out, "planted") {
		t.Fatalf("the command did not run:\n%s", out)
	}
	pyc, _ := filepath.Glob(filepath.Join(proj, "tools", "__pycache__", "*.pyc"))
	if len(pyc) > 0 {
		t.Errorf("a sandboxed command wrote %q", pyc)
	}
	ran("after the command", 1)

	// As a command could have before keel protected the folder (before the hook named it).
	forge := exec.Command("python3", "-", mark)
	forge.Dir, forge.Stdin = proj, strings.NewReader(forgePyc)
	if b, err := forge.CombinedOutput(); err != nil {
		t.Fatalf("forge the bytecode: %v\n%s", err, b)
	}
	result(t, h.send(t, "again"))
	ran("with forged bytecode in place", 2)
}
