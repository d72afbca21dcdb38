package tui_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel/internal/mcphost/mcptest"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/waittest"
)

// formServer is an MCP server on 127.0.0.1 whose signup tool asks the user to fill in a
// form; answers receives what came back.
func formServer(t *testing.T) (url string, answers <-chan *mcp.ElicitResult) {
	t.Helper()
	got := make(chan *mcp.ElicitResult, 1)
	srv := mcp.NewServer(&mcp.Implementation{Name: "forms", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "signup", Description: "Sign the user up."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Sign up for the beta.", RequestedSchema: map[string]any{
				"type": "object", "required": []any{"name"}, "properties": map[string]any{
					"name":       map[string]any{"type": "string", "title": "Full name", "minLength": 2},
					"plan":       map[string]any{"type": "string", "title": "Plan", "enum": []any{"free", "pro"}, "default": "free"},
					"newsletter": map[string]any{"type": "boolean", "title": "Newsletter", "default": true},
				}}})
			if err != nil {
				return nil, nil, err
			}
			got <- res
			b, _ := json.Marshal(res.Content)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Action + " " + string(b)}}}, nil, nil
		})
	return mcptest.HTTP(t, srv), got
}

// TestE2EElicitationForm: the real binary shows an MCP server's form in the terminal;
// the user fills it in with the keyboard (a too-short name is refused first) and the
// server gets the answer, defaults included.
func TestE2EElicitationForm(t *testing.T) {
	url, answers := formServer(t)
	srv := startScripted(t,
		scripted.Rule{When: scripted.Match{UserText: "sign me up"}, Reply: []scripted.Block{scripted.ToolUse("mcp__forms__signup", map[string]any{})}},
		scripted.Rule{When: scripted.Match{ToolResult: "mcp__forms__signup"}, Reply: []scripted.Block{scripted.Text("You are signed up.")}},
	)
	cfg := `{"mcpServers":{"forms":{"type":"http","url":"` + url + `"}}}`
	tm := startKeel(t, srv, t.TempDir(), 100, 32, "--mcp-config", cfg, "--allowedTools", "mcp__forms__signup")
	tm.waitFor("shift+tab")
	tm.typeText("sign me up")
	tm.keys("Enter")
	s := tm.waitFor("forms (MCP server) asks")
	for _, want := range []string{"Sign up for the beta.", "Full name *", "‹ free ›", "[x]"} {
		if !strings.Contains(s, want) {
			t.Errorf("form lacks %q:\n%s", want, s)
		}
	}
	tm.typeText("A")
	tm.keys("Tab", "Tab", "Tab", "Enter") // Accept
	tm.waitFor("at least 2 characters")
	tm.typeText("da")
	tm.keys("Tab", "Right", "Tab", "Space", "Tab", "Enter") // newsletter: off; plan: pro; Accept
	res := waittest.Recv(t, "the form's answer at the server", answers)
	want := &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "plan": "pro", "newsletter": false}}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("answer mismatch (-want +got):\n%s", diff)
	}
	tm.waitFor("You are signed up.")
	tm.waitFor("forms asked: Sign up for the beta. — answered")
}
