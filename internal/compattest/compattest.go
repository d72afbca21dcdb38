// Package compattest finds the corpus of real-world files other harnesses' users have
// (shared/compat: agents, skills, settings, memory files), which lives beside the project
// checkout and is never copied into it. Tests read it in place.
package compattest

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns shared/compat/<sub> found walking up from the test's package directory (or
// under $KEEL_COMPAT_DIR), and skips the test, saying why, when there is none.
func Dir(t testing.TB, sub ...string) string {
	t.Helper()
	rel := filepath.Join(sub...)
	if root := os.Getenv("KEEL_COMPAT_DIR"); root != "" {
		return filepath.Join(root, rel)
	}
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		p := filepath.Join(dir, "shared", "compat", rel)
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skipf("COMPAT CORPUS ABSENT: no shared/compat/%s above the package and KEEL_COMPAT_DIR unset; the real-file checks are skipped", rel)
		}
		dir = parent
	}
}
