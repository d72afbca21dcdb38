package scripted

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestLoadExample(t *testing.T) {
	sc, err := LoadScenario(filepath.Join("testdata", "example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	want := &Scenario{
		Cache:    CacheConfig{MinTokens: 1024, Lookback: 20},
		Fallback: &Rule{Reply: []Block{Text("I have nothing scripted for that.")}},
		Rules: []Rule{
			{Name: "overloaded-once", When: Match{Request: 1}, Fault: &Fault{Status: 529, RetryAfterMS: 10}},
			{Name: "read", When: Match{UserText: "fix the failing test"}, Reply: []Block{
				Thinking("The test is in calc_test.go; read the code first."),
				Text("Let me look at the code."),
				{Kind: KindToolUse, Name: "Read", Input: raw(`{"file_path":"calc.go"}`)},
			}},
			{Name: "edit", When: Match{ToolResult: "Read"}, Reply: []Block{
				{Kind: KindToolUse, Name: "Edit", Input: raw(`{"file_path":"calc.go","old_string":"return a - b","new_string":"return a + b"}`)},
			}},
			{Name: "test", When: Match{ToolResult: "Edit"}, Reply: []Block{
				{Kind: KindToolUse, Name: "Bash", Input: raw(`{"command":"go test ./...","description":"Run the tests"}`)},
			}},
			{Name: "done", When: Match{ToolResult: "Bash", Contains: "ok"}, Times: 1, Reply: []Block{Text("The test passes now.")}},
			{Name: "essay", When: Match{UserText: "write an essay"}, StopReason: "max_tokens", Reply: []Block{Text("It was a dark and stormy")}},
			{Name: "flaky-stream", When: Match{UserText: "flaky", HasTool: "Write", LacksTool: "Agent", System: "keel"}, Times: 1,
				//keel:duration a pace, not a limit
				Fault: &Fault{DropAfter: 5, Delay: 5 * time.Millisecond}, Reply: []Block{Text("This stream is cut after five events.")}},
		},
	}
	if diff := cmp.Diff(want, sc); diff != "" {
		t.Errorf("example mismatch (-want +got):\n%s", diff)
	}
	if err := sc.Validate(); err != nil {
		t.Error(err)
	}
}

// The package doc shows testdata/example.yaml; keep them the same.
func TestDocShowsExample(t *testing.T) {
	example, err := os.ReadFile(filepath.Join("testdata", "example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var quoted []string
	for _, line := range strings.Split(strings.TrimRight(string(example), "\n"), "\n") {
		if line == "" {
			quoted = append(quoted, "//")
		} else {
			quoted = append(quoted, "//\t"+line)
		}
	}
	if !strings.Contains(string(doc), strings.Join(quoted, "\n")) {
		t.Error("doc.go does not show testdata/example.yaml verbatim; copy it into the package doc")
	}
}

func TestParseScenarioErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown top key", "rules: []\nrulez: []\n",
			`s.yaml:2: unknown key "rulez" in scenario; valid keys: rules, fallback, cache`},
		{"unknown rule key", "rules:\n  - name: a\n    reply: [{text: hi}]\n    whenn: {}\n",
			`s.yaml:4: unknown key "whenn" in rule; valid keys: name, when, times, reply, stop_reason, fault`},
		{"unknown condition", "rules:\n  - when: {user_txt: x}\n    reply: [{text: hi}]\n",
			`s.yaml:2: unknown key "user_txt" in when; valid keys: user_text, tool_result, has_tool, lacks_tool, request, system, contains, model`},
		{"bad stop reason", "rules:\n  - reply: [{text: hi}]\n    stop_reason: done\n",
			`s.yaml:3: stop_reason "done" is not one of end_turn, tool_use, max_tokens, stop_sequence, pause_turn, refusal`},
		{"bad block", "rules:\n  - reply:\n      - image: x\n",
			`s.yaml:3: unknown key "image" in reply block; valid keys: text, thinking, tool_use`},
		{"two kinds in a block", "rules:\n  - reply:\n      - text: a\n        thinking: b\n",
			`s.yaml:4: a reply block has exactly one of text, thinking, tool_use`},
		{"tool_use without name", "rules:\n  - reply:\n      - tool_use: {input: {a: 1}}\n",
			`s.yaml:3: tool_use needs a name`},
		{"tool_use input not a map", "rules:\n  - reply:\n      - tool_use: {name: Read, input: [1]}\n",
			`s.yaml:3: tool_use input must be a mapping`},
		{"bad status", "rules:\n  - fault: {status: 200}\n",
			`s.yaml:2: fault status 200 is not an HTTP error status (400-599; e.g. 429, 500, 529)`},
		{"bad delay", "rules:\n  - reply: [{text: x}]\n    fault:\n      delay: soon\n",
			`s.yaml:4: delay "soon" is not a duration like 50ms or 1s`},
		{"unknown fault key", "rules:\n  - fault: {status: 529, retry: 1}\n",
			`s.yaml:2: unknown key "retry" in fault; valid keys: status, retry_after, retry_after_ms, message, drop_after, corrupt, delay`},
		{"times not a number", "rules:\n  - reply: [{text: x}]\n    times: twice\n",
			`s.yaml:3: times must be an integer`},
		{"request zero", "rules:\n  - when: {request: 0}\n    reply: [{text: x}]\n",
			`s.yaml:2: request counts from 1`},
		{"rule without reply", "rules:\n  - name: empty\n    when: {user_text: x}\n",
			`s.yaml:2: rule needs a reply (a list of text, thinking or tool_use blocks) or a fault with a status`},
		{"rules not a list", "rules: {name: a}\n", `s.yaml:1: rules must be a list`},
		{"fallback with when", "fallback:\n  when: {user_text: x}\n",
			`s.yaml:2: unknown key "when" in rule; valid keys: reply, stop_reason, fault`},
		{"cache key", "cache: {min: 5}\n", `s.yaml:1: unknown key "min" in cache; valid keys: min_tokens, lookback`},
		{"duplicate key", "rules:\n  - name: a\n    name: b\n    reply: [{text: x}]\n", `s.yaml:3: `},
		{"syntax error", "rules:\n  - reply: [{text: x}\n", `s.yaml:`},
		{"empty", "", `s.yaml:1: empty scenario; valid keys: rules, fallback, cache`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseScenario("s.yaml", []byte(tt.yaml))
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error mismatch (-want +got):\n%s", cmp.Diff(tt.want, err.Error()))
			}
		})
	}
}

func TestLoadScenarioNamesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte("rules:\n  - reply: [{txt: a}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadScenario(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+":2: ") {
		t.Errorf("error = %v, want it to start with %s:2:", err, path)
	}
}

func TestValidateGoScenario(t *testing.T) {
	tests := []struct {
		name string
		sc   Scenario
		want string
	}{
		{"ok", Scenario{Rules: []Rule{{Reply: []Block{ToolUse("Read", map[string]string{"file_path": "x"})}}}}, ""},
		{"bad kind", Scenario{Rules: []Rule{{Reply: []Block{{Kind: "image"}}}}}, `rule 1: reply block 1: kind "image" is not one of text, thinking, tool_use`},
		{"input not object", Scenario{Rules: []Rule{{Reply: []Block{{Kind: KindToolUse, Name: "R", Input: json.RawMessage(`[1]`)}}}}}, "rule 1: reply block 1: tool_use input is not a JSON object"},
		{"fallback stop", Scenario{Fallback: &Rule{StopReason: "nope"}}, `fallback: stop_reason "nope" is not one of`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(&tt.sc, Options{})
			got := ""
			if err != nil {
				got = strings.TrimPrefix(err.Error(), "scenario: ")
			}
			if (tt.want == "") != (got == "") || !strings.HasPrefix(got, tt.want) {
				t.Errorf("error = %q, want prefix %q", got, tt.want)
			}
		})
	}
}
