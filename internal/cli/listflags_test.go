package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestExpandListFlags: the shapes of Claude Code's documented examples, parsed as its parser
// (commander) parses them.
func TestExpandListFlags(t *testing.T) {
	for _, tt := range []struct{ in, want []string }{
		// claude -p "query" --allowedTools "Bash(git log:*)" "Read"
		{[]string{"-p", "query", "--allowedTools", "Bash(git log:*)", "Read"},
			[]string{"-p", "query", "--allowedTools=Bash(git log:*)", "--allowedTools=Read"}},
		// The list ends at the next flag; what follows that flag's value is the prompt.
		{[]string{"--allowedTools", "Read", "Edit", "--model", "haiku", "fix it"},
			[]string{"--allowedTools=Read", "--allowedTools=Edit", "--model", "haiku", "fix it"}},
		// A prompt after a list flag is one of its values, as in Claude Code; -- ends the list.
		{[]string{"--add-dir", "../a", "../b", "--", "fix it"},
			[]string{"--add-dir=../a", "--add-dir=../b", "--", "fix it"}},
		// --flag=value takes that value only.
		{[]string{"--mcp-config=a.json", "query"}, []string{"--mcp-config=a.json", "query"}},
		// The first value is taken whatever it looks like; a lone "-" is a value.
		{[]string{"--disallowed-tools", "-x", "-", "-p"}, []string{"--disallowed-tools=-x", "--disallowed-tools=-", "-p"}},
		{[]string{"--tools", "Bash", "Read", "-p"}, []string{"--tools=Bash,Read", "-p"}},
		{[]string{"--tools", "", "-p", "q"}, []string{"--tools=", "-p", "q"}},
		// A flag without a value is left for pflag to refuse.
		{[]string{"-p", "q", "--add-dir"}, []string{"-p", "q", "--add-dir"}},
		{[]string{"--", "--add-dir", "x"}, []string{"--", "--add-dir", "x"}},
	} {
		if diff := cmp.Diff(tt.want, expandListFlags(tt.in)); diff != "" {
			t.Errorf("expandListFlags(%q) mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
}

// TestNearest: a typo gets the name it was meant to be; a word that is no typo gets none.
func TestNearest(t *testing.T) {
	names := []string{"sessions", "team", "demo", "models", "allowedTools", "add-dir", "json"}
	for _, tt := range []struct{ in, want string }{
		{"sesions", "sessions"},
		{"allowed-tools", "allowedTools"},
		{"allowed_tools", "allowedTools"},
		{"allowed-tols", "allowedTools"},
		{"jsn", "json"},
		{"demos", "demo"},
		{"test", ""}, // two edits from team: a prompt, not a typo
		{"fix", ""},
		{"team", ""}, // the name itself
	} {
		if got := nearest(tt.in, names); got != tt.want {
			t.Errorf("nearest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
