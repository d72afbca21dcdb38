package scripted

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func webTool(extra map[string]any) map[string]any {
	t := map[string]any{"type": "web_search_20250305", "name": "web_search"}
	for k, v := range extra {
		t[k] = v
	}
	return t
}

var goResults = []WebResult{
	{Title: "Go 1.18 is released", URL: "https://go.dev/blog/go1.18", PageAge: "March 15, 2022", Text: "Go 1.18 adds generics"},
	{Title: "Generics elsewhere", URL: "https://example.com/generics", Text: "elsewhere"},
}

func TestWebSearchReply(t *testing.T) {
	search := WebSearch("go generics", goResults...)
	search.Answer = "Go got generics in 1.18."
	s := start(t, &Scenario{Rules: []Rule{{Reply: []Block{search}}}}, Options{})
	tools := []any{webTool(map[string]any{"allowed_domains": []string{"go.dev"}, "max_uses": 3})}

	_, body := post(t, s, "/v1/messages", msgs(false, tools, user("search")))
	var msg struct {
		Content []json.RawMessage `json:"content"`
		Usage   struct {
			ServerToolUse struct {
				WebSearchRequests int `json:"web_search_requests"`
			} `json:"server_tool_use"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	var got []string
	for _, c := range msg.Content {
		got = append(got, string(c))
	}
	want := []string{
		`{"type":"server_tool_use","id":"srvtoolu_scripted_0001_w0","name":"web_search","input":{"query":"go generics"},"caller":{"type":"direct"}}`,
		`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_scripted_0001_w0","content":[{"type":"web_search_result","title":"Go 1.18 is released","url":"https://go.dev/blog/go1.18","encrypted_content":"c2NyaXB0ZWQgcGFnZTogaHR0cHM6Ly9nby5kZXYvYmxvZy9nbzEuMTg=","page_age":"March 15, 2022"}],"caller":{"type":"direct"}}`,
		`{"type":"text","text":"Go got generics in 1.18.","citations":[{"type":"web_search_result_location","cited_text":"Go 1.18 adds generics","url":"https://go.dev/blog/go1.18","title":"Go 1.18 is released","encrypted_index":"c2NyaXB0ZWQgaW5kZXg6IGh0dHBzOi8vZ28uZGV2L2Jsb2cvZ28xLjE4"}]}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("content mismatch (-want +got):\n%s", diff)
	}
	if n := msg.Usage.ServerToolUse.WebSearchRequests; n != 1 {
		t.Errorf("web_search_requests = %d, want 1", n)
	}

	// Streamed, the citations arrive as citations_delta events before the text.
	_, stream := post(t, s, "/v1/messages", msgs(true, tools, user("search")))
	text := string(stream)
	cite, delta := strings.Index(text, `"citations_delta"`), strings.Index(text, `"text_delta"`)
	if cite < 0 || delta < 0 || cite > delta {
		t.Errorf("want citations_delta before the text_delta:\n%s", text)
	}
}

func TestWebSearchMaxUses(t *testing.T) {
	s := start(t, &Scenario{Rules: []Rule{{Reply: []Block{WebSearch("a", goResults...), WebSearch("b", goResults...)}}}}, Options{})
	_, body := post(t, s, "/v1/messages", msgs(false, []any{webTool(map[string]any{"max_uses": 1})}, user("x")))
	if !strings.Contains(string(body), `"content":{"type":"web_search_tool_result_error","error_code":"max_uses_exceeded"}`) {
		t.Errorf("the second search was not refused:\n%s", body)
	}
}

func TestWebSearchToolChecked(t *testing.T) {
	s := start(t, &Scenario{Rules: []Rule{{Reply: []Block{WebSearch("q", goResults...)}}}}, Options{})
	tests := []struct {
		name   string
		tools  []any
		status int
		want   string
	}{
		{"both filters", []any{webTool(map[string]any{"allowed_domains": []string{"a.com"}, "blocked_domains": []string{"b.com"}})}, 400, "Only one of allowed_domains and blocked_domains"},
		{"unknown field", []any{webTool(map[string]any{"max_results": 3})}, 400, "tools.0.max_results: Extra inputs are not permitted"},
		{"zero max_uses", []any{webTool(map[string]any{"max_uses": 0})}, 400, "max_uses: Input should be greater than 0"},
		{"scheme in domain", []any{webTool(map[string]any{"blocked_domains": []string{"https://b.com"}})}, 400, "without a scheme"},
		{"wrong name", []any{map[string]any{"type": "web_search_20250305", "name": "search"}}, 400, "Input should be 'web_search'"},
		{"unknown version", []any{map[string]any{"type": "web_search_20990101", "name": "web_search"}}, 400, "not a known server tool type"},
		{"no tool", nil, 500, "the request has no web_search tool"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := post(t, s, "/v1/messages", msgs(false, tt.tools, user("x")))
			if resp.StatusCode != tt.status || !strings.Contains(string(body), tt.want) {
				t.Errorf("got %d %s, want %d with %q", resp.StatusCode, body, tt.status, tt.want)
			}
		})
	}
	if resp, _ := post(t, s, "/v1/chat/completions", map[string]any{"model": "m", "messages": []any{user("x")}}); resp.StatusCode != http.StatusOK {
		t.Errorf("chat completions: status %d; a web search should just be left out", resp.StatusCode)
	}
}

func TestWebSearchYAML(t *testing.T) {
	sc, err := ParseScenario("s.yaml", []byte(`rules:
  - reply:
      - web_search:
          query: go generics
          results:
            - {title: Go 1.18, url: "https://go.dev/blog/go1.18", page_age: "2022", text: adds generics}
          answer: In 1.18.
`))
	if err != nil {
		t.Fatal(err)
	}
	b := sc.Rules[0].Reply[0]
	want := Block{Kind: KindWebSearch, Text: "go generics", Answer: "In 1.18.",
		Results: []WebResult{{Title: "Go 1.18", URL: "https://go.dev/blog/go1.18", PageAge: "2022", Text: "adds generics"}}}
	if diff := cmp.Diff(want, b); diff != "" {
		t.Errorf("block mismatch (-want +got):\n%s", diff)
	}
	if _, err := ParseScenario("s.yaml", []byte("rules:\n  - reply:\n      - web_search: {results: [{title: x}]}\n")); err == nil || !strings.Contains(err.Error(), "s.yaml:3") {
		t.Errorf("err = %v, want a file:line error", err)
	}
}
