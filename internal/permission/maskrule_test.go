package permission

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMaskRule: the rule a sandbox mask stands for denies the Read tool the masked path and
// what is below it, naming the setting, but not what allowRead leaves readable within it, nor
// a path beside it; the search filter and the prompt filter say the sandbox masks it; and a
// command's reads are left to the sandbox — no question for grep -r over the workspace.
func TestMaskRule(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"secrets/k.txt", "secrets/public/p.txt", "secretsX/x.txt"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src := Source{Name: "sandbox.filesystem.denyRead of user", Path: "/h/settings.json", Line: 3}
	r, err := MaskRule(filepath.Join(dir, "secrets"), []string{filepath.Join(dir, "secrets", "public")}, "sandbox.filesystem.denyRead", src)
	if err != nil {
		t.Fatal(err)
	}
	c := New(Config{Policy: Policy{Mode: ModeBypassPermissions, Dirs: []string{dir}, Rules: []Rule{r}}})
	for path, deny := range map[string]bool{"secrets": true, "secrets/k.txt": true, "secrets/public/p.txt": false, "secretsX/x.txt": false} {
		d := c.Evaluate(Request{Tool: "Read", Paths: []string{filepath.Join(dir, path)}})
		if (d.Behavior == Deny) != deny || deny && !strings.Contains(d.Reason, "from sandbox.filesystem.denyRead of user settings /h/settings.json:3") {
			t.Errorf("Read %s: %s %q, want deny=%v naming the setting", path, d.Behavior, d.Reason, deny)
		}
	}
	hide, _ := c.SearchFilter()
	if !hide(filepath.Join(dir, "secrets", "k.txt")) || hide(filepath.Join(dir, "secrets", "public", "p.txt")) {
		t.Error("the search filter does not hide the masked file, or hides what allowRead leaves")
	}
	if got := c.ReadFilter()(filepath.Join(dir, "secrets", "k.txt")); got != "the sandbox masks it (sandbox.filesystem.denyRead)" {
		t.Errorf("ReadFilter = %q", got)
	}
	for _, cmd := range []string{"grep -r x .", "cat secrets/k.txt"} {
		if d := c.Evaluate(Request{Tool: "Bash", Command: cmd}); d.Behavior != Allow {
			t.Errorf("Bash %q: %s %q, want it left to the sandbox", cmd, d.Behavior, d.Reason)
		}
	}
}
