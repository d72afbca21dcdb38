package agentdef

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseJSON(t *testing.T) {
	in := `{
  "reviewer": {
    "description": "Reviews diffs",
    "prompt": "You review.",
    "tools": ["Read", "Grep"],
    "model": "sonnet",
    "maxTurns": 12,
    "effort": "high"
  },
  "bad": {
    "description": "x",
    "maxTurns": 0
  },
  "nodesc": {"prompt": "p"},
  "runner": {"description": "Runs things", "prompt": "Run.", "tools": "Bash, Read", "background": true, "color": "teal"}
}`
	defs, diags := ParseJSON(CLIPath, []byte(in))
	want := []*Definition{
		{Name: "reviewer", Description: "Reviews diffs", Prompt: "You review.", Tools: []string{"Read", "Grep"}, Model: "sonnet", MaxTurns: 12, Effort: Effort{Level: "high"}, Format: FormatKeel, Path: CLIPath},
		{Name: "runner", Description: "Runs things", Prompt: "Run.", Tools: []string{"Bash", "Read"}, Background: true, Format: FormatKeel, Path: CLIPath},
	}
	if diff := cmp.Diff(want, defs); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	wantDiags := []string{
		"error: --agents:12: maxTurns must be a positive integer, got 0",
		`error: --agents:14: missing required "description" field in agent "nodesc"`,
		`warning: --agents:15: color "teal" is not one of red, blue, green, yellow, purple, orange, pink, cyan or a #RRGGBB hex colour; ignored`,
	}
	if diff := cmp.Diff(wantDiags, render(diags)); diff != "" {
		t.Errorf("diagnostics mismatch (-want +got):\n%s", diff)
	}
}

func TestParseJSONSyntax(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"truncated", "{\"a\": {\n", []string{"error: --agents:2: invalid JSON: unexpected end of input"}},
		{"not an object", `["a"]`, []string{`error: --agents:1: invalid JSON: expected "{", found [`}},
		{"agent not an object", `{"a": "b"}`, []string{`error: --agents:1: invalid JSON: expected "{", found b`}},
		{"syntax", "{\n  \"a\": {,}\n}", []string{"error: --agents:2: invalid JSON: invalid character ','"}},
		{"trailing data", `{} {}`, []string{"error: --agents:1: invalid JSON: data after the closing brace"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defs, diags := ParseJSON(CLIPath, []byte(tt.in))
			if defs != nil {
				t.Errorf("want no definitions, got %v", defs)
			}
			if diff := cmp.Diff(tt.want, render(diags)); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseJSONFile(t *testing.T) {
	def, diags := parseJSONFile("a.json", []byte("{\n  \"name\": \"a\",\n  \"description\": \"d\",\n  \"prompt\": \"p\",\n  \"isolation\": \"vm\"\n}\n"))
	if def != nil {
		t.Errorf("want no definition, got %+v", def)
	}
	want := []string{`error: a.json:5: isolation "vm" is not one of worktree`}
	if diff := cmp.Diff(want, render(diags)); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestBuiltins(t *testing.T) {
	type summary struct {
		Name            string
		Tools           []string
		DisallowedTools []string
		OneShot         bool
	}
	var got []summary
	for _, d := range Builtins() {
		if d.Description == "" || len(d.Prompt) < 200 || d.Source != SourceBuiltin {
			t.Errorf("built-in %s: description %q, prompt of %d bytes, source %q", d.Name, d.Description, len(d.Prompt), d.Source)
		}
		got = append(got, summary{d.Name, d.Tools, d.DisallowedTools, d.OneShot})
	}
	readOnly := []string{"Agent", "Edit", "Write", "NotebookEdit", "ExitPlanMode"}
	want := []summary{
		{"general-purpose", []string{"*"}, nil, false},
		{"Explore", nil, readOnly, true},
		{"Plan", nil, readOnly, true},
		{"verification", nil, []string{"Agent", "Edit", "Write", "NotebookEdit"}, false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}
