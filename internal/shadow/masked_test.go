package shadow_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/shadow"
)

// TestMaskedLeftOut: what Options.Exclude names (the sandbox's masks) is never captured — a
// file new under a masked directory stays out, a masked file an earlier session's capture
// holds leaves the index it seeds (the next checkpoint lacks it), a name with glob
// characters is read literally — and a restore leaves the masked files where they are.
func TestMaskedLeftOut(t *testing.T) {
	repo := project(t)
	home := t.TempDir()
	sh(t, repo.Dir, "mkdir secrets && echo TOKEN > secrets/token && echo ENV > .env && echo KEY > 'x[1].key' && echo k > x1.key")
	first := open(t, repo.Dir, home, "s1")
	before, err := first.Capture(t.Context(), "unmasked")
	if err != nil {
		t.Fatal(err)
	}
	masked := []string{"/secrets", "/secrets/**", "/.env", `/x\[1\].key`}
	r, err := shadow.Open(t.Context(), repo.Dir, shadow.Options{Home: home, Session: "s2",
		Exclude: func(workTree string) []string { return masked }})
	if err != nil {
		t.Fatal(err)
	}
	sh(t, repo.Dir, "echo NEW > secrets/new")
	after, err := r.Capture(t.Context(), "masked")
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Changes(t.Context(), before, after)
	if err != nil {
		t.Fatal(err)
	}
	want := []shadow.Change{{Status: "D", Path: ".env"}, {Status: "D", Path: "secrets/token"}, {Status: "D", Path: "x[1].key"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changes from the unmasked capture to the masked one (-want +got):\n%s", diff)
	}
	sh(t, repo.Dir, "echo changed > data.txt")
	if _, err := r.Restore(t.Context(), after); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{".env", "secrets/token", "secrets/new", "x[1].key", "x1.key"} {
		if _, err := os.Stat(filepath.Join(repo.Dir, f)); err != nil {
			t.Errorf("after a restore: %v", err)
		}
	}
}
