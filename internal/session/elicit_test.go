package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel/internal/mcphost/mcptest"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

// askScenario calls the test server's elicitation tool once and ends with its result.
func askScenario(tool string) *scripted.Scenario {
	return &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "ask"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse(tool, map[string]string{})}},
		{Reply: []scripted.Block{scripted.Text("done")}},
	}}
}

// lastRequest is the body of the last model request, which carries the tool result.
func lastRequest(h *harness) string {
	reqs := h.srv.Requests()
	return string(reqs[len(reqs)-1].Body)
}

func TestElicitationHookAnswersWithDefaults(t *testing.T) {
	dir := t.TempDir()
	seen := filepath.Join(dir, "seen.json")
	hook := writeHook(t, dir, "answer.sh", "cat > "+seen+"\necho '{\"hookSpecificOutput\":{\"hookEventName\":\"Elicitation\",\"action\":\"accept\",\"content\":{\"name\":\"Ada\"}}}'\n")
	result := writeHook(t, dir, "result.sh", "cat > "+seen+".result\n")
	settings := `{"hooks":{"Elicitation":[{"matcher":"t","hooks":[{"type":"command","command":"` + hook + `"}]}],` +
		`"ElicitationResult":[{"hooks":[{"type":"command","command":"` + result + `"}]}]}}`
	srv := mcptest.New()
	h := newHarness(t, askScenario("mcp__t__ask_defaults"), Options{PermissionMode: "bypassPermissions", SettingsArgs: []string{settings},
		MCP: MCPOptions{InProcess: map[string]*mcp.Server{"t": srv.Server}}})
	h.send(t, "ask the user")
	// The hook gave a name; the other fields got the schema's defaults.
	if want := `accept {\"age\":30,\"name\":\"Ada\",\"status\":\"active\",\"verified\":true}`; !strings.Contains(lastRequest(h), want) {
		t.Errorf("tool result lacks %s:\n%s", want, lastRequest(h))
	}
	in, _ := os.ReadFile(seen)
	for _, want := range []string{`"hook_event_name":"Elicitation"`, `"mcp_server_name":"t"`, `"message":"Confirm your details"`, `"requested_schema":{`} {
		if !strings.Contains(string(in), want) {
			t.Errorf("Elicitation hook input lacks %s: %s", want, in)
		}
	}
	out, _ := os.ReadFile(seen + ".result")
	if !strings.Contains(string(out), `"action":"accept"`) || !strings.Contains(string(out), `"hook_event_name":"ElicitationResult"`) {
		t.Errorf("ElicitationResult hook input = %s", out)
	}
}

func TestElicitationAskerAndResultHookBlock(t *testing.T) {
	dir := t.TempDir()
	block := writeHook(t, dir, "block.sh", "cat >/dev/null\necho no >&2\nexit 2\n")
	settings := `{"hooks":{"ElicitationResult":[{"hooks":[{"type":"command","command":"` + block + `"}]}]}}`
	var asked string
	ask := func(_ context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		asked = server + ": " + p.Message
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace"}}, nil
	}
	srv := mcptest.New()
	h := newHarness(t, askScenario("mcp__t__ask"), Options{PermissionMode: "bypassPermissions", SettingsArgs: []string{settings},
		MCP: MCPOptions{InProcess: map[string]*mcp.Server{"t": srv.Server}, Elicit: ask}})
	h.send(t, "ask the user")
	if asked != "t: What is your name?" {
		t.Errorf("asker got %q", asked)
	}
	// The ElicitationResult hook blocked the answer: the server sees a decline.
	if !strings.Contains(lastRequest(h), "decline null") {
		t.Errorf("tool result is not the decline:\n%s", lastRequest(h))
	}
}

func TestElicitationHeadlessIsNotAdvertised(t *testing.T) {
	srv := mcptest.New()
	h := newHarness(t, askScenario("mcp__t__ask_defaults"), Options{PermissionMode: "bypassPermissions",
		MCP: MCPOptions{InProcess: map[string]*mcp.Server{"t": srv.Server}}})
	h.send(t, "ask the user")
	if !strings.Contains(lastRequest(h), "no elicitation capability") {
		t.Errorf("a headless session advertised elicitation:\n%s", lastRequest(h))
	}
}
