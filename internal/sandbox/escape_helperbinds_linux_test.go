package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/sandbox"
)

// TestEscapeHelperBinds: with the caches' overlays, where bubblewrap leaves the helper the
// capability to mount, the helper rather than bubblewrap binds the placeholders of absent
// read-only paths and pins the repository's .git; each still holds: a placeholder can be
// neither removed nor made writable, the pinned .git not moved.
func TestEscapeHelperBinds(t *testing.T) { forEachLauncher(t, testEscapeHelperBinds) }

func testEscapeHelperBinds(t *testing.T) {
	cache := filepath.Join(sandbox.VisibleDir(t), "cache")
	if err := os.Mkdir(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, func(in *sandbox.Input) {
		in.Caches, in.KeelHome = []string{cache}, filepath.Join(t.TempDir(), "keel")
	})
	attempts := map[string]string{
		"remove placeholder": "rmdir .mcp.json && echo pwned > .mcp.json",
		"unlock placeholder": "chmod u+w .keel && echo pwned > .keel/settings.json",
		"move .git":          "mv .git .git-old",
	}
	for name, script := range attempts {
		t.Run(name, func(t *testing.T) {
			if out := w.run(t, script+" && echo ESCAPED"); strings.Contains(out, "ESCAPED") {
				t.Errorf("%q succeeded inside the sandbox:\n%s", script, out)
			}
		})
	}
	for _, p := range []string{".mcp.json", ".keel", ".git-old"} {
		if _, err := os.Lstat(filepath.Join(w.ws, p)); err == nil {
			t.Errorf("%s is in the workspace after the attempts", p)
		}
	}
}
