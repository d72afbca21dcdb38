package hooks

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/keel-dev/keel/internal/settings"
)

// TestHooksRunUnderTheirTraceparent: a hook on a tool event runs under the TRACEPARENT of its
// tool call, any other under the prompt's, replacing one keel inherited; without one the
// environment is left alone.
func TestHooksRunUnderTheirTraceparent(t *testing.T) {
	e := newEnv(t)
	cmd := e.script("tp.sh", `cat >/dev/null; printf '%s\n' "$TRACEPARENT" >> tp.txt`)
	groups := []settings.HookGroup{userHook("PreToolUse", "", 0, cmd), userHook("UserPromptSubmit", "", 0, cmd)}
	var asked []string
	r, _ := New(Config{Hooks: groups, ProjectDir: e.dir, Trusted: true,
		Environ: []string{"PATH=" + os.Getenv("PATH"), "TRACEPARENT=00-inherited"},
		Traceparent: func(id string) string {
			asked = append(asked, id)
			if id == "" {
				return "00-prompt"
			}
			return "00-tool-" + id
		}})
	r.Run(t.Context(), PreToolUse, editInput())
	r.Run(t.Context(), UserPromptSubmit, Input{Prompt: "hi"})
	plain := e.runner(userHook("Stop", "", 0, cmd))
	plain.cfg.Environ = append(plain.cfg.Environ, "TRACEPARENT=00-inherited")
	plain.Run(t.Context(), Stop, Input{})
	data, err := os.ReadFile(filepath.Join(e.dir, "tp.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("00-tool-tu1\n00-prompt\n00-inherited\n", string(data)); diff != "" {
		t.Errorf("TRACEPARENT seen by the hooks mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"tu1", ""}, asked); diff != "" {
		t.Errorf("Traceparent asked for mismatch (-want +got):\n%s", diff)
	}
}
