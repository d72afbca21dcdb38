package session

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/sandbox"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/lsp/lsptest"
	"github.com/keel-dev/keel/internal/mcphost/mcptest"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

func TestMain(m *testing.M) {
	sandbox.Dispatch(os.Args) // and so is the sandbox's helper
	mcptest.RunIfChild()      // stdio MCP servers in these tests are this binary, re-executed
	lsptest.RunIfChild()      // and so are the fake language servers
	os.Exit(m.Run())
}

// toolNames returns the tool names of a recorded Messages API request.
func toolNames(t *testing.T, body []byte) []string {
	t.Helper()
	var req struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range req.Tools {
		names = append(names, tl.Name)
	}
	return names
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestNewMCPToolReachesTheVeryNextRequest(t *testing.T) {
	srv := mcptest.New()
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "grow"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("mcp__t__add_tool", map[string]string{"name": "fresh"})}},
		{When: scripted.Match{HasTool: "mcp__t__fresh"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("mcp__t__fresh", map[string]string{"text": "hi"})}},
		{Reply: []scripted.Block{scripted.Text("done")}},
	}}
	h := newHarness(t, sc, Options{PermissionMode: "bypassPermissions", MCP: MCPOptions{InProcess: map[string]*mcp.Server{"t": srv.Server}}})
	res := result(t, h.send(t, "grow a tool"))
	reqs := h.srv.Requests()
	if got := toolNames(t, reqs[0].Body); has(got, "mcp__t__fresh") || !has(got, "mcp__t__echo") {
		t.Fatalf("first request tools = %v", got)
	}
	if got := toolNames(t, reqs[1].Body); !has(got, "mcp__t__fresh") {
		t.Errorf("the request right after list_changed lacks the new tool: %v", got)
	}
	if res.Text != "done" || res.NumTurns != 3 {
		t.Errorf("result %q after %d turns, want the new tool called and done after 3", res.Text, res.NumTurns)
	}
}

func TestCrashedMCPServerToolsVanish(t *testing.T) {
	cmd, args, env := mcptest.Command(mcptest.ModeEverything)
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"s": map[string]any{"type": "stdio", "command": cmd, "args": args, "env": env}}})
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "crash"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("mcp__s__crash", map[string]string{})}},
		{When: scripted.Match{ToolResult: "mcp__s__crash"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("mcp__s__echo", map[string]string{"text": "still there?"})}},
		{Reply: []scripted.Block{scripted.Text("noted")}},
	}}
	h := newHarness(t, sc, Options{PermissionMode: "bypassPermissions", MCP: MCPOptions{Configs: []string{string(cfg)}}})
	events := h.send(t, "crash the server")
	// The user is told too, not only the model.
	var told bool
	for _, e := range events {
		if n, ok := e.(event.Notice); ok && n.Level == "warn" && strings.Contains(n.Text, `MCP server "s" disconnected`) {
			told = true
		}
	}
	if !told {
		t.Errorf("no notice that the server disconnected: %v", events)
	}
	reqs := h.srv.Requests()
	if !has(toolNames(t, reqs[0].Body), "mcp__s__echo") {
		t.Fatal("the server's tools were not offered before the crash")
	}
	if has(toolNames(t, reqs[1].Body), "mcp__s__echo") {
		t.Error("the crashed server's tools are still offered in the next request")
	}
	hist := h.sess.History()
	var echoResult string
	for _, m := range hist {
		for _, b := range m.Content {
			if b.Type == "tool_result" && b.IsError && strings.Contains(b.ToolUseID, "0002") {
				echoResult = b.Content[0].Text
			}
		}
	}
	if echoResult == "" || strings.Contains(echoResult, "No such tool") {
		t.Errorf("calling the crashed server's tool gave %q, want the server's clear failure", echoResult)
	}
	st := h.sess.MCP().Status()
	if len(st) != 1 || st[0].Status != "failed" {
		t.Errorf("status = %+v, want s failed", st)
	}
}

// TestMCPBadServerNotice: a server that answers garbage is named, with what was wrong, in a
// notice the user sees; the model still gets the good server's tools and calls them.
func TestMCPBadServerNotice(t *testing.T) {
	good := mcptest.HTTP(t, mcptest.New().Server)
	bad := mcptest.BadHTTP(t, mcptest.BadGarbage)
	cfg := `{"mcpServers":{"good":{"type":"http","url":"` + good + `"},"broken":{"type":"http","url":"` + bad + `"}}}`
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "echo"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("mcp__good__echo", map[string]string{"text": "fine"})}},
		{Reply: []scripted.Block{scripted.Text("done")}},
	}}
	h := newHarness(t, sc, Options{PermissionMode: "bypassPermissions", MCP: MCPOptions{Configs: []string{cfg}}})
	events := h.send(t, "echo something")
	var notices []string
	for _, e := range events {
		if n, ok := e.(event.Notice); ok {
			notices = append(notices, n.Level+": "+n.Text)
		}
	}
	want := `warn: MCP server "broken" failed to start: connect: calling "initialize"`
	if len(notices) != 1 || !strings.HasPrefix(notices[0], want) || !strings.Contains(notices[0], "Hello! This is not JSON-RPC.") {
		t.Errorf("notices = %q, want one starting %q that quotes the answer", notices, want)
	}
	if body := string(h.srv.Requests()[1].Body); !strings.Contains(body, `"text":"fine"`) {
		t.Errorf("the good server's echo did not reach the model:\n%s", body)
	}
}
