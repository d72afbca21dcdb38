package permission

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// TestConditionMatches pins the `if` semantics of Claude Code's hooks reference: permission
// syntax, any sub-command of a line (inside $() too), leading assignments skipped, and fail
// open when a pattern naming more than the command meets what only running the line decides.
func TestConditionMatches(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	file := func(tool, path string) (string, json.RawMessage) {
		b, _ := json.Marshal(map[string]string{"file_path": path})
		return tool, b
	}
	tests := []struct {
		cond  string
		tool  string
		input json.RawMessage
		want  bool
	}{
		{"Bash", "Bash", json.RawMessage(`{"command":"ls"}`), true},
		{"Bash(git *)", "Bash", json.RawMessage(`{"command":"git status"}`), true},
		{"Bash(git *)", "Bash", json.RawMessage(`{"command":"ls -la"}`), false},
		{"Bash(git *)", "Read", json.RawMessage(`{"file_path":"/x"}`), false},
		{"Bash(git push *)", "Bash", json.RawMessage(`{"command":"cd sub && git push origin main"}`), true},
		{"Bash(git push *)", "Bash", json.RawMessage(`{"command":"git status"}`), false},
		{"Bash(git push *)", "Bash", json.RawMessage(`{"command":"FOO=1 git push origin"}`), true},
		{"Bash(git *)", "Bash", json.RawMessage(`{"command":"echo $(git rev-parse HEAD)"}`), true},
		{"Bash(rm *)", "Bash", json.RawMessage(`{"command":"ls; echo hi"}`), false},
		// Fails open: what $REMOTE or $(…) holds decides whether this is a push to main.
		{"Bash(git push origin main)", "Bash", json.RawMessage(`{"command":"git push $REMOTE main"}`), true},
		{"Bash(git push origin main)", "Bash", json.RawMessage(`{"command":"git push $(echo origin) main"}`), true},
		// …but a pattern naming only the program does not: the program is known.
		{"Bash(npm *)", "Bash", json.RawMessage(`{"command":"git push $REMOTE"}`), false},
		{"Bash(git commit:*)", "Bash", json.RawMessage(`{"command":"git commit -m x"}`), true},
		{"Edit(*.ts)", "Edit", nil, true},
		{"Edit(*.ts)", "Write", nil, true},
		{"Edit(*.ts)", "Edit", nil, false},
		{"Read(~/.ssh/**)", "Read", nil, true},
		{"mcp__github", "mcp__github__create_issue", json.RawMessage(`{}`), true},
		{"mcp__github", "mcp__gitlab__create_issue", json.RawMessage(`{}`), false},
		{"WebFetch(domain:example.com)", "WebFetch", json.RawMessage(`{"url":"https://example.com/a"}`), true},
		{"WebFetch(domain:example.com)", "WebFetch", json.RawMessage(`{"url":"https://other.org/a"}`), false},
	}
	// The file rows' inputs depend on the directories; fill them in order.
	fileInputs := []struct{ tool, path string }{
		{"Edit", filepath.Join(dir, "src", "a.ts")},
		{"Write", filepath.Join(dir, "b.ts")},
		{"Edit", filepath.Join(dir, "a.go")},
		{"Read", filepath.Join(home, ".ssh", "id_ed25519")},
	}
	fi := 0
	for i := range tests {
		if tests[i].input == nil {
			tests[i].tool, tests[i].input = file(fileInputs[fi].tool, fileInputs[fi].path)
			fi++
		}
	}
	for _, tt := range tests {
		c, err := ParseCondition(tt.cond)
		if err != nil {
			t.Fatalf("ParseCondition(%q): %v", tt.cond, err)
		}
		if got := c.Matches(tt.tool, tt.input, dir, home); got != tt.want {
			t.Errorf("%s matches %s %s = %v, want %v", tt.cond, tt.tool, tt.input, got, tt.want)
		}
	}
}

func TestParseConditionRejectsWhatRulesReject(t *testing.T) {
	for _, text := range []string{"", "Bash(", "Bash(git status; rm x)", "mcp__x(y)"} {
		if _, err := ParseCondition(text); err == nil {
			t.Errorf("ParseCondition(%q) = nil error, want the rule's error", text)
		}
	}
}
