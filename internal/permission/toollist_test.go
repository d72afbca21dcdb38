package permission

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSplitToolList: one splitter for every tool list — flags, agent frontmatter (these cases
// were agentdef's splitNames'), skill allowed-tools.
func TestSplitToolList(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"Read, Grep", []string{"Read", "Grep"}},
		{"Read,Glob", []string{"Read", "Glob"}},
		{"Read Grep  Bash(python:*)", []string{"Read", "Grep", "Bash(python:*)"}},
		{"Bash(git add:*), Bash(git commit:*)", []string{"Bash(git add:*)", "Bash(git commit:*)"}},
		{"Bash(a, b) Read", []string{"Bash(a, b)", "Read"}},
		{`"Read", 'Grep'`, []string{"Read", "Grep"}},
		{" , ,", nil},
		{"Bash(git log:*),Edit Read(src/**)", []string{"Bash(git log:*)", "Edit", "Read(src/**)"}},
		{"Bash(gh pr view:*) Read\tGrep\nGlob", []string{"Bash(gh pr view:*)", "Read", "Grep", "Glob"}},
		{`Bash(echo "a b")`, []string{`Bash(echo "a b")`}},
		{"Read Bash(git log:*", []string{"Read", "Bash(git log:*"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, SplitToolList(tt.in)); diff != "" {
			t.Errorf("SplitToolList(%q) mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
}
