package permission

import (
	"strings"
	"testing"
)

// BenchmarkEvaluateBash measures one Bash decision: a typical compound line, the same with a
// Read deny rule (arguments resolved as paths), and a 64 KB line of nested wrappers, the
// costliest shape keel still analyses.
func BenchmarkEvaluateBash(b *testing.B) {
	dir := b.TempDir()
	allow := mustRules(b, Allow, "Bash(git status:*)", "Bash(go test:*)", "Bash(head:*)")
	cases := []struct {
		name  string
		rules []Rule
		cmd   string
	}{
		{"typical", allow, "cd sub && go test ./... 2>&1 | head -50; git status --short"},
		{"typical with Read deny", append(mustRules(b, Deny, "Read(./secrets/**)", "Bash(rm:*)"), allow...),
			"cd sub && go test ./... 2>&1 | head -50; git status --short"},
		{"64 KB of wrappers", append(mustRules(b, Deny, "Bash(rm:*)"), allow...), strings.Repeat("sudo ", 13000) + "rm x"},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			ch := New(Config{Policy: Policy{Mode: ModeDefault, Rules: c.rules, Dirs: []string{dir}}})
			for b.Loop() {
				ch.Evaluate(Request{Tool: "Bash", Command: c.cmd})
			}
		})
	}
}
