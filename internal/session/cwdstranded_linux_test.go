package session

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/sandbox"
)

// TestSandboxedCdToPrivateTmpStaysPut: a sandboxed command that ends in a directory of its
// private /tmp — one whose name the host has too, or one only the command has — does not move
// the session there: the result says why, the session stays where it was, and the next
// command runs there (it failed to start in the directory only the command had).
func TestSandboxedCdToPrivateTmpStaysPut(t *testing.T) {
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	twin, _ := filepath.EvalSymlinks(t.TempDir()) // on the host too; inside, in the private /tmp
	only := filepath.Join(twin, "only-inside")
	bash := func(prompt, command string) scripted.Rule {
		return scripted.Rule{When: scripted.Match{UserText: prompt}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Bash", map[string]any{"command": command})}}
	}
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		bash("twin", "mkdir -p "+twin+" && cd "+twin),
		bash("only", "mkdir -p "+only+" && cd "+only),
		bash("after twin", "pwd; echo NEXT-RAN"),
		bash("after only", "pwd; echo NEXT-RAN"),
		{Reply: []scripted.Block{scripted.Text("done")}},
	}}
	h := newHarness(t, sc, Options{Cwd: ws, Sandbox: "workspace-write", PermissionMode: "bypassPermissions"})
	if err := h.sess.sandbox.Available(); errors.Is(err, sandbox.ErrUnavailable) {
		t.Skipf("no sandbox on this machine: %v", err)
	}
	for _, c := range []struct{ prompt, dir string }{{"twin", twin}, {"only", only}} {
		out := bashOutput(h.send(t, c.prompt))
		want := "keel: the command ended in " + c.dir + ", but each command has a /tmp of its own, which the host does not share; the working directory stays " + ws + "."
		if !strings.Contains(out, want) || strings.Contains(out, "Working directory is now") {
			t.Errorf("cd %s: result\n%s\nwant it to say %q", c.dir, out, want)
		}
		if out := bashOutput(h.send(t, "after "+c.prompt)); !strings.Contains(out, ws+"\nNEXT-RAN") {
			t.Errorf("after cd %s, the next command:\n%s\nwant it run in %s", c.dir, out, ws)
		}
	}
}
