package permission

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadFilterRefusesWhatTheReadRulesCover checks the filter keel applies to the files it
// reads into a prompt itself: a deny rule's file is refused naming the rule, an ask rule's
// too (nobody is asked), a link is judged by the file it leads to — in this policy and in a
// ceiling over it — and a file no rule covers may be read.
func TestReadFilterRefusesWhatTheReadRulesCover(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"secrets/token", "asked/key", "docs/ok.md"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "docs", "alias.md")
	if err := os.Symlink(filepath.Join(dir, "secrets", "token"), link); err != nil {
		t.Fatal(err)
	}
	if New(Config{Policy: Policy{Dirs: []string{dir}}}).ReadFilter() != nil {
		t.Error("a policy without Read deny or ask rules has a filter")
	}
	parent := New(Config{Policy: Policy{Dirs: []string{dir}, Rules: mustRules(t, Deny, "Read(./secrets/**)")}})
	child := parent.Child(Policy{Mode: ModeBypassPermissions, Rules: mustRules(t, Ask, "Read(./asked/**)")}, AgentInfo{}, nil)
	refused := child.ReadFilter()
	for path, want := range map[string]string{
		filepath.Join(dir, "secrets", "token"): "a Read deny rule covers it (Read(./secrets/**))",
		link:                                   "a Read deny rule covers it (Read(./secrets/**))",
		filepath.Join(dir, "asked", "key"):     "a Read ask rule covers it (Read(./asked/**))",
		filepath.Join(dir, "docs", "ok.md"):    "",
	} {
		if got := refused(path); !strings.HasPrefix(got, want) || (want == "") != (got == "") {
			t.Errorf("refused(%s) = %q, want %q", path, got, want)
		}
	}
}
