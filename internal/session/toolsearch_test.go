package session

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel/internal/mcphost/mcptest"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/provider/connect"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

// manyToolsServer is the mcptest server with 30 more echo tools.
func manyToolsServer() *mcptest.Server {
	srv := mcptest.New()
	for i := range 30 {
		srv.AddEcho(fmt.Sprintf("tool_%02d", i))
	}
	return srv
}

// newProviderHarness is newHarness against the scripted server through the named adapter.
func newProviderHarness(t *testing.T, name string, sc *scripted.Scenario, opts Options) *harness {
	t.Helper()
	srv, err := scripted.Start(t.Context(), "", sc, scripted.Options{})
	if err != nil {
		t.Fatalf("start scripted server: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	base := srv.URL()
	if name == "openai" {
		base += "/v1"
	}
	prov, model, err := connect.Open(connect.Config{Provider: name, BaseURL: base, APIKey: "test", Model: "claude-sonnet-4-5",
		Retry: &provider.RetryPolicy{Sleep: instant}}, func(string) string { return "" })
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	opts.Provider, opts.Model, opts.Cwd, opts.Home = prov, model, t.TempDir(), t.TempDir()
	opts.ManagedSettingsPath, opts.ManagedMemoryPath = "-", "-"
	sess, err := New(t.Context(), opts)
	if err != nil {
		t.Fatalf("new session: %v", err)
	}
	t.Cleanup(func() { sess.Close() })
	return &harness{srv: srv, sess: sess}
}

// wireParts is the system prompt and the messages of a recorded Messages or chat body, as
// JSON text, to check what a request says where.
func wireParts(t *testing.T, body []byte) (system, messages string) {
	t.Helper()
	var req struct {
		System   json.RawMessage `json:"system"`
		Messages json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	var msgs []json.RawMessage
	_ = json.Unmarshal(req.Messages, &msgs)
	var rest []json.RawMessage
	for _, m := range msgs {
		var role struct{ Role string }
		_ = json.Unmarshal(m, &role)
		if role.Role == "system" || role.Role == "developer" { // chat completions put the system prompt first
			req.System = append(req.System, m...)
			continue
		}
		rest = append(rest, m)
	}
	var text []string
	for _, m := range rest {
		var v any
		_ = json.Unmarshal(m, &v)
		text = append(text, fmt.Sprint(v))
	}
	return string(req.System), strings.ReplaceAll(strings.Join(text, "\n"), `\n`, "\n")
}

// wireTools is the "tools" array of a recorded body, as sent.
func wireTools(t *testing.T, body []byte) []json.RawMessage {
	t.Helper()
	var req struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	return req.Tools
}

// TestNativeToolSearch: with the Anthropic adapter every MCP tool is sent deferred, the API's
// search tool ends the list, nothing is listed in the system prompt; the model searches on the
// server side and calls the tool it found; the tool list is the same bytes on every request.
func TestNativeToolSearch(t *testing.T) {
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "echo something"}, Times: 1, Reply: []scripted.Block{
			scripted.ToolSearch("tool_07", "mcp__t__tool_07"),
			scripted.ToolUse("mcp__t__tool_07", map[string]string{"text": "hi"}),
		}},
		{When: scripted.Match{ToolResult: "mcp__t__tool_07", Contains: "tool_07: hi"}, Reply: []scripted.Block{scripted.Text("done")}},
	}}
	h := newProviderHarness(t, "anthropic", sc, Options{PermissionMode: "bypassPermissions",
		MCP: MCPOptions{ToolSearch: "on", InProcess: map[string]*mcp.Server{"t": manyToolsServer().Server}}})
	res := result(t, h.send(t, "echo something"))
	if res.Text != "done" || res.NumTurns != 2 {
		t.Fatalf("result %q after %d turns, want the found tool called and done after 2", res.Text, res.NumTurns)
	}
	reqs := h.srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	first := wireTools(t, reqs[0].Body)
	names := toolNames(t, reqs[0].Body)
	if has(names, "ToolSearch") {
		t.Error("native mode offers the ToolSearch fallback tool")
	}
	if names[len(names)-1] != "tool_search_tool_regex" {
		t.Errorf("last tool = %q, want the API's search tool", names[len(names)-1])
	}
	deferred := map[string]bool{}
	for _, tl := range h.sess.deferredTools(t.Context()) {
		deferred[tl.Name()] = true
	}
	for _, name := range []string{"BashOutput", "KillShell", "TaskOutput", "TaskStop", "SendMessage", "ListMcpResourcesTool"} {
		if !deferred[name] {
			t.Errorf("%s is not deferred", name)
		}
	}
	mcpTools := 0
	for i, raw := range first {
		var spec struct {
			Name         string `json:"name"`
			DeferLoading bool   `json:"defer_loading"`
		}
		_ = json.Unmarshal(raw, &spec)
		isMCP := strings.HasPrefix(spec.Name, "mcp__")
		if isMCP {
			mcpTools++
		}
		if want := isMCP || deferred[spec.Name]; want != spec.DeferLoading {
			t.Errorf("tools[%d] %s: defer_loading=%v, want it exactly on MCP tools and the deferrable built-ins", i, spec.Name, spec.DeferLoading)
		}
	}
	if mcpTools < 30 {
		t.Errorf("%d MCP tools sent, want all of them (deferred)", mcpTools)
	}
	if sys, msgs := wireParts(t, reqs[0].Body); strings.Contains(sys, "mcp__t__tool_07") || !strings.Contains(msgs, "- mcp__t__tool_07\n") ||
		!strings.Contains(msgs, "loaded with tool_search_tool_regex") {
		t.Errorf("the deferred tools are not named once in a message (and only there); messages:\n%s", msgs)
	}
	second := wireTools(t, reqs[1].Body)
	if fmt.Sprint(first) != fmt.Sprint(second) {
		t.Errorf("the tool list changed between requests:\n%s\n%s", first, second)
	}
	if !strings.Contains(string(reqs[1].Body), `{"type":"tool_reference","tool_name":"mcp__t__tool_07"}`) {
		t.Errorf("the second request does not replay the search result:\n%s", reqs[1].Body)
	}
}

// TestFallbackToolSearch: the OpenAI adapter has no native tool search, so MCP tools are
// deferred behind the ToolSearch tool and listed by name; the tool ToolSearch loads is
// appended at the end of the list, leaving the earlier tools as they were.
func TestFallbackToolSearch(t *testing.T) {
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "echo something"}, Times: 1, Reply: []scripted.Block{
			scripted.ToolUse("ToolSearch", map[string]string{"query": "select:mcp__t__tool_07"})}},
		{When: scripted.Match{ToolResult: "ToolSearch", HasTool: "mcp__t__tool_07"}, Times: 1, Reply: []scripted.Block{
			scripted.ToolUse("mcp__t__tool_07", map[string]string{"text": "hi"})}},
		{When: scripted.Match{ToolResult: "mcp__t__tool_07", Contains: "tool_07: hi"}, Reply: []scripted.Block{scripted.Text("done")}},
	}}
	h := newProviderHarness(t, "openai", sc, Options{PermissionMode: "bypassPermissions",
		MCP: MCPOptions{ToolSearch: "on", InProcess: map[string]*mcp.Server{"t": manyToolsServer().Server}}})
	res := result(t, h.send(t, "echo something"))
	if res.Text != "done" || res.NumTurns != 3 {
		t.Fatalf("result %q after %d turns, want search, call, done", res.Text, res.NumTurns)
	}
	reqs := h.srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	if strings.Contains(string(reqs[0].Body), "defer_loading") || strings.Contains(string(reqs[0].Body), "tool_search_tool") {
		t.Error("the OpenAI request carries native tool-search fields")
	}
	if sys, msgs := wireParts(t, reqs[0].Body); strings.Contains(sys, "mcp__t__tool_07") || !strings.Contains(msgs, "- mcp__t__tool_07\n") ||
		!strings.Contains(msgs, "loaded with ToolSearch") {
		t.Errorf("the deferred tools are not named once in a message (and only there); messages:\n%s", msgs)
	}
	first, second := wireTools(t, reqs[0].Body), wireTools(t, reqs[1].Body)
	if len(second) != len(first)+1 {
		t.Fatalf("second request has %d tools, want the %d of the first plus the loaded one", len(second), len(first))
	}
	if fmt.Sprint(first) != fmt.Sprint(second[:len(first)]) {
		t.Errorf("the tools before the loaded one changed:\n%s\n%s", first, second[:len(first)])
	}
	if !strings.Contains(string(second[len(first)]), "mcp__t__tool_07") {
		t.Errorf("last tool of the second request = %s, want mcp__t__tool_07", second[len(first)])
	}
}

// TestDeferredBuiltinsBehindToolSearch: without native tool search (the OpenAI adapter) the
// rarely needed built-ins stay out of the request, named in the listing; ToolSearch loads one,
// which joins the end of the next request's tools and can be called.
func TestDeferredBuiltinsBehindToolSearch(t *testing.T) {
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "check the shell"}, Times: 1, Reply: []scripted.Block{
			scripted.ToolUse("ToolSearch", map[string]string{"query": "select:KillShell"})}},
		{When: scripted.Match{ToolResult: "ToolSearch", HasTool: "KillShell"}, Times: 1, Reply: []scripted.Block{
			scripted.ToolUse("KillShell", map[string]string{"shell_id": "nope"})}},
		{When: scripted.Match{ToolResult: "KillShell"}, Reply: []scripted.Block{scripted.Text("done")}},
	}}
	h := newProviderHarness(t, "openai", sc, Options{PermissionMode: "bypassPermissions"})
	res := result(t, h.send(t, "check the shell"))
	if res.Text != "done" || res.NumTurns != 3 {
		t.Fatalf("result %q after %d turns, want search, call, done", res.Text, res.NumTurns)
	}
	reqs := h.srv.Requests()
	first := chatToolNames(t, reqs[0].Body)
	for _, name := range []string{"TodoWrite", "BashOutput", "KillShell", "TaskOutput", "TaskStop", "SendMessage"} {
		if has(first, name) {
			t.Errorf("the first request sends %s whole", name)
		}
	}
	if !has(first, "ToolSearch") || !has(first, "Bash") || !has(h.sess.ToolNames(), "KillShell") {
		t.Errorf("first request tools %v, session tools %v", first, h.sess.ToolNames())
	}
	if _, msgs := wireParts(t, reqs[0].Body); !strings.Contains(msgs, "- KillShell\n") {
		t.Error("KillShell is not named in the listing")
	}
	second := chatToolNames(t, reqs[1].Body)
	if len(second) != len(first)+1 || second[len(second)-1] != "KillShell" {
		t.Errorf("second request tools %v, want the first's plus KillShell at the end", second)
	}
	if text, _ := toolResultText(t, h.sess.History()[4:]); !strings.Contains(text, "nope") {
		t.Errorf("KillShell did not run: %q", text)
	}
}

// chatToolNames lists the function names of a chat-completions body's tools.
func chatToolNames(t *testing.T, body []byte) []string {
	t.Helper()
	var req struct {
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range req.Tools {
		names = append(names, tl.Function.Name)
	}
	return names
}
