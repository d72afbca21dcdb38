package scripted

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRuleMatching(t *testing.T) {
	toolUse := func(id, name string) map[string]any {
		return map[string]any{"type": "tool_use", "id": id, "name": name, "input": map[string]any{}}
	}
	result := func(id, content string) map[string]any {
		return map[string]any{"type": "tool_result", "tool_use_id": id, "content": content}
	}
	hi := user("hi")
	tests := []struct {
		name  string
		rules []Rule
		// bodies are sent in order; want is the rule name that answered each.
		bodies []any
		want   []string
	}{
		{
			name:   "user text substring, else fallback",
			rules:  []Rule{{Name: "fix", When: Match{UserText: "failing test"}, Reply: []Block{Text("ok")}}},
			bodies: []any{msgs(false, nil, user("please fix the failing test now")), msgs(false, nil, user("hello"))},
			want:   []string{"fix", "fallback"},
		},
		{
			name: "user text ignores tool results, contains sees them",
			rules: []Rule{
				{Name: "text", When: Match{UserText: "PASS"}, Reply: []Block{Text("t")}},
				{Name: "anywhere", When: Match{Contains: "PASS"}, Reply: []Block{Text("a")}},
			},
			bodies: []any{msgs(false, nil,
				user("run it"), assistant([]any{toolUse("t1", "Bash")}),
				user([]any{result("t1", "--- PASS: TestAdd")}))},
			want: []string{"anywhere"},
		},
		{
			name: "tool result found through the tool_use id",
			rules: []Rule{
				{Name: "after-read", When: Match{ToolResult: "Read"}, Reply: []Block{Text("r")}},
				{Name: "after-bash", When: Match{ToolResult: "Bash"}, Reply: []Block{Text("b")}},
			},
			bodies: []any{
				msgs(false, nil, user("go"), assistant([]any{toolUse("t1", "Read")}), user([]any{result("t1", "x")}),
					assistant([]any{toolUse("t2", "Bash")}), user([]any{result("t2", "y")})),
				msgs(false, nil, user("go"), assistant([]any{toolUse("t1", "Read")}),
					user([]any{result("t1", "x")}), assistant("read it"), user("no result here")),
			},
			want: []string{"after-bash", "fallback"},
		},
		{
			name: "tool present and absent",
			rules: []Rule{
				{Name: "no-agent", When: Match{HasTool: "Read", LacksTool: "Agent"}, Reply: []Block{Text("x")}},
				{Name: "with-agent", When: Match{HasTool: "Agent"}, Reply: []Block{Text("y")}},
			},
			bodies: []any{
				msgs(false, []any{tool("Read"), tool("Agent")}, hi),
				msgs(false, []any{tool("Read")}, hi),
				msgs(false, nil, hi),
			},
			want: []string{"with-agent", "no-agent", "fallback"},
		},
		{
			name: "request number counts every model request",
			rules: []Rule{
				{Name: "second", When: Match{Request: 2}, Reply: []Block{Text("2")}},
				{Name: "any", Reply: []Block{Text("*")}},
			},
			bodies: []any{msgs(false, nil, hi), msgs(false, nil, hi), msgs(false, nil, hi)},
			want:   []string{"any", "second", "any"},
		},
		{
			name: "system prompt and model",
			rules: []Rule{
				{Name: "sys", When: Match{System: "keel", Model: "opus"}, Reply: []Block{Text("s")}},
				{Name: "model", When: Match{Model: "claude"}, Reply: []Block{Text("m")}},
			},
			bodies: []any{msgs(false, nil, hi)},
			want:   []string{"model"},
		},
		{
			name: "history sees every message; thinking tells requests apart",
			rules: []Rule{
				{Name: "thinks", When: Match{Thinking: &yes}, Reply: []Block{Text("t")}},
				{Name: "remembers", When: Match{History: "the word is PLUM"}, Reply: []Block{Text("r")}},
			},
			bodies: []any{
				msgs(false, nil, user("the word is PLUM"), assistant([]any{map[string]any{"type": "text", "text": "ok"}}), user("which word?")),
				msgs(false, nil, user("which word?")),
				thinking(msgs(false, nil, user("which word?")), 2048),
			},
			want: []string{"remembers", "fallback", "thinks"},
		},
		{
			name: "times limits firing, unnamed rules are numbered",
			rules: []Rule{
				{Times: 2, Reply: []Block{Text("first two")}},
				{Reply: []Block{Text("rest")}},
			},
			bodies: []any{msgs(false, nil, hi), msgs(false, nil, hi), msgs(false, nil, hi)},
			want:   []string{"rule 1", "rule 1", "rule 2"},
		},
		{
			name:  "chat completions share the rules",
			rules: []Rule{{Name: "after-read", When: Match{ToolResult: "Read", System: "keel", HasTool: "Read"}, Reply: []Block{Text("r")}}},
			bodies: []any{chat(false,
				map[string]any{"role": "system", "content": "You are keel."},
				map[string]any{"role": "user", "content": "go"},
				map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "c1", "type": "function",
					"function": map[string]any{"name": "Read", "arguments": "{}"}}}},
				map[string]any{"role": "tool", "tool_call_id": "c1", "content": "text"})},
			want: []string{"after-read"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, &Scenario{Rules: tt.rules}, Options{})
			var got []string
			for _, b := range tt.bodies {
				path := "/v1/messages"
				if _, ok := b.(map[string]any)["max_tokens"]; !ok {
					path = "/v1/chat/completions"
				}
				resp, body := post(t, s, path, b)
				if resp.StatusCode != 200 {
					t.Fatalf("status %d: %s", resp.StatusCode, body)
				}
			}
			for _, r := range s.Requests() {
				got = append(got, r.Rule)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("matched rules mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

var yes = true

// thinking adds an extended-thinking request with budget to a Messages body.
func thinking(body map[string]any, budget int) map[string]any {
	body["max_tokens"] = budget * 2
	body["thinking"] = map[string]any{"type": "enabled", "budget_tokens": budget}
	return body
}

func TestThinkingChecked(t *testing.T) {
	s := start(t, &Scenario{}, Options{})
	for _, tt := range []struct {
		budget, max int
		want        string
	}{
		{512, 4096, "greater than or equal to 1024"},
		{4096, 4096, "`max_tokens` must be greater than `thinking.budget_tokens`"},
	} {
		body := thinking(msgs(false, nil, user("hi")), tt.budget)
		body["max_tokens"] = tt.max
		resp, out := post(t, s, "/v1/messages", body)
		if resp.StatusCode != 400 || !strings.Contains(string(out), tt.want) {
			t.Errorf("budget %d of %d: status %d %s, want 400 with %q", tt.budget, tt.max, resp.StatusCode, out, tt.want)
		}
	}
}

func TestFallbackReply(t *testing.T) {
	custom := &Scenario{Fallback: &Rule{Reply: []Block{Text("custom")}, StopReason: "max_tokens"}}
	for _, tt := range []struct {
		name string
		sc   *Scenario
		want string
	}{
		{"built-in", &Scenario{}, `"text":"` + DefaultFallbackText + `"}],"stop_reason":"end_turn"`},
		{"custom", custom, `"text":"custom"}],"stop_reason":"max_tokens"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, tt.sc, Options{})
			_, body := post(t, s, "/v1/messages", msgs(false, nil, user("hi")))
			if !strings.Contains(string(body), tt.want) {
				t.Errorf("body %s lacks %s", body, tt.want)
			}
		})
	}
}
