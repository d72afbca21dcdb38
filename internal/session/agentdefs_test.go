package session

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/mcphost/mcptest"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

// writeAgent writes a project agent definition into cwd's .keel/agents.
func writeAgent(t *testing.T, cwd, name, frontmatter string) {
	t.Helper()
	dir := filepath.Join(cwd, ".keel", "agents")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	text := "---\nname: " + name + "\ndescription: a test agent\n" + frontmatter + "---\nYou are " + name + ".\n"
	if err := os.WriteFile(filepath.Join(dir, name+".md"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// requestWith returns the first recorded request whose body holds marker.
func requestWith(t *testing.T, h *harness, marker string) []byte {
	t.Helper()
	for _, r := range h.srv.Requests() {
		if strings.Contains(string(r.Body), marker) {
			return r.Body
		}
	}
	t.Fatalf("no request holds %q", marker)
	return nil
}

func spawnRules(agentType, prompt string, child ...scripted.Rule) *scripted.Scenario {
	return &scripted.Scenario{Rules: append(child,
		scripted.Rule{Name: "spawn", When: scripted.Match{UserText: "start"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Agent",
			map[string]any{"description": "d", "prompt": prompt, "subagent_type": agentType})}},
		scripted.Rule{Name: "parent-done", When: scripted.Match{ToolResult: "Agent"}, Reply: []scripted.Block{scripted.Text("parent done")}},
	)}
}

// TestAgentHooksRunOnlyForThatAgent: hooks in a definition's frontmatter run for that
// agent's tool calls (and its Stop, as SubagentStop), never for the parent's.
func TestAgentHooksRunOnlyForThatAgent(t *testing.T) {
	cwd, _ := filepath.EvalSymlinks(t.TempDir())
	log, stops := filepath.Join(cwd, "pre.log"), filepath.Join(cwd, "stop.log")
	writeAgent(t, cwd, "hooked", "hooks:\n  PreToolUse:\n    - matcher: Read\n      hooks:\n        - type: command\n          command: \"cat >> "+log+"\"\n"+
		"  Stop:\n    - hooks:\n        - type: command\n          command: \"echo stop >> "+stops+"\"\n")
	for name, text := range map[string]string{"parent.txt": "PARENT-FILE", "child.txt": "CHILD-FILE"} {
		if err := os.WriteFile(filepath.Join(cwd, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "parent-read", When: scripted.Match{UserText: "start"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Read", map[string]any{"file_path": filepath.Join(cwd, "parent.txt")})}},
		{Name: "spawn", When: scripted.Match{Contains: "PARENT-FILE"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Agent",
			map[string]any{"description": "d", "prompt": "CHILD-TASK", "subagent_type": "hooked"})}},
		{Name: "child-read", When: scripted.Match{UserText: "CHILD-TASK"}, Reply: []scripted.Block{scripted.ToolUse("Read", map[string]any{"file_path": filepath.Join(cwd, "child.txt")})}},
		{Name: "child-done", When: scripted.Match{Contains: "CHILD-FILE"}, Reply: []scripted.Block{scripted.Text("child done")}},
		{Name: "parent-done", When: scripted.Match{ToolResult: "Agent"}, Reply: []scripted.Block{scripted.Text("parent done")}},
	}}
	h := newHarness(t, sc, Options{Cwd: cwd, Trust: true})
	if res := result(t, h.send(t, "start")); res.Text != "parent done" {
		t.Fatalf("result = %q", res.Text)
	}
	got, err := os.ReadFile(log)
	if err != nil {
		t.Fatalf("the agent's PreToolUse hook never ran: %v", err)
	}
	if !strings.Contains(string(got), "child.txt") || strings.Contains(string(got), "parent.txt") {
		t.Errorf("PreToolUse log = %s; want the child's Read only", got)
	}
	if got, _ := os.ReadFile(stops); string(got) != "stop\n" {
		t.Errorf("stop log = %q; want the agent's Stop hook once, for the child", got)
	}
}

// TestAgentMCPServersByName: a definition naming configured servers sees only their tools.
func TestAgentMCPServersByName(t *testing.T) {
	cwd := t.TempDir()
	writeAgent(t, cwd, "alpha-only", "mcpServers:\n  - alpha\n")
	sc := spawnRules("alpha-only", "MCP-TASK",
		scripted.Rule{Name: "child", When: scripted.Match{UserText: "MCP-TASK"}, Reply: []scripted.Block{scripted.Text("child done")}})
	h := newHarness(t, sc, Options{Cwd: cwd, MCP: MCPOptions{InProcess: map[string]*mcp.Server{"alpha": mcptest.New().Server, "beta": mcptest.New().Server}}})
	result(t, h.send(t, "start"))
	parent := toolNames(t, h.srv.Requests()[0].Body)
	child := toolNames(t, requestWith(t, h, "MCP-TASK"))
	if !has(parent, "mcp__alpha__echo") || !has(parent, "mcp__beta__echo") {
		t.Fatalf("parent tools = %v; want both servers", parent)
	}
	if !has(child, "mcp__alpha__echo") || has(child, "mcp__beta__echo") || !has(child, "Read") {
		t.Errorf("child tools = %v; want alpha's and the built-ins, not beta's", child)
	}
}

// TestAgentInlineMCPServer: a server configured in the definition runs for the child only.
func TestAgentInlineMCPServer(t *testing.T) {
	cwd := t.TempDir()
	cmd, args, env := mcptest.Command(mcptest.ModeEverything)
	cfg, _ := json.Marshal(map[string]any{"type": "stdio", "command": cmd, "args": args, "env": env})
	writeAgent(t, cwd, "own-server", "mcpServers:\n  - own: "+string(cfg)+"\n")
	sc := spawnRules("own-server", "OWN-TASK",
		scripted.Rule{Name: "child-call", When: scripted.Match{UserText: "OWN-TASK"}, Reply: []scripted.Block{scripted.ToolUse("mcp__own__echo", map[string]any{"text": "ECHO-ME"})}},
		scripted.Rule{Name: "child-done", When: scripted.Match{ToolResult: "mcp__own__echo"}, Reply: []scripted.Block{scripted.Text("child done")}})
	// A project's agent starts its servers only in a trusted workspace.
	untrusted := newHarness(t, sc, Options{Cwd: cwd, PermissionMode: "bypassPermissions"})
	result(t, untrusted.send(t, "start"))
	if body := string(requestWith(t, untrusted, "not trusted to run its MCP servers")); !strings.Contains(body, "own-server.md") {
		t.Errorf("untrusted: the Agent result does not name the file: %s", body)
	}

	h := newHarness(t, sc, Options{Cwd: cwd, PermissionMode: "bypassPermissions", Trust: true})
	if res := result(t, h.send(t, "start")); res.Text != "parent done" {
		t.Fatalf("result = %q", res.Text)
	}
	if has(toolNames(t, h.srv.Requests()[0].Body), "mcp__own__echo") {
		t.Error("the parent got the agent's own server")
	}
	if !has(toolNames(t, requestWith(t, h, "OWN-TASK")), "mcp__own__echo") {
		t.Error("the child lacks its own server's tools")
	}
	var called bool
	for _, r := range h.srv.Requests() {
		if r.Rule == "child-done" && strings.Contains(string(r.Body), "ECHO-ME") {
			called = true
		}
	}
	if !called {
		t.Error("the child's call to its own server returned nothing")
	}
}

// TestBackgroundMovesForegroundAgent: Ctrl+B while a slow foreground subagent runs — the
// Agent call returns a receipt at once, the parent's turn ends, and the agent's result
// arrives as a notification in the parent's next request.
func TestBackgroundMovesForegroundAgent(t *testing.T) {
	// The child's answer is held until the parent's turn is over, so the agent is surely
	// still running when it is moved, and finishes only in the background.
	release := make(chan struct{})
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "drained", When: scripted.Match{Contains: "<task-notification>"}, Reply: []scripted.Block{scripted.Text("report received")}},
		{Name: "slow-child", When: scripted.Match{UserText: "SLOW-TASK"}, Reply: []scripted.Block{scripted.Text("slow findings: 9")},
			Fault: &scripted.Fault{Hold: release}},
		{Name: "spawn", When: scripted.Match{UserText: "start"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Agent",
			map[string]any{"description": "slow", "prompt": "SLOW-TASK", "subagent_type": "general-purpose"})}},
		{Name: "after-agent", When: scripted.Match{ToolResult: "Agent"}, Reply: []scripted.Block{scripted.Text("parent turn done")}},
	}}
	h := newHarness(t, sc, Options{})
	if err := h.sess.Agents().Background(t.Context()); err == nil {
		t.Error("Background with nothing running: no error")
	}
	var res event.Result
	moved, started := false, 0
	for e, err := range h.sess.Send(t.Context(), "start") {
		if err != nil {
			t.Fatal(err)
		}
		switch e := e.(type) {
		case event.TaskStarted:
			started++
			if !moved {
				if err := h.sess.Agents().Background(t.Context()); err != nil {
					t.Fatalf("Background: %v", err)
				}
				moved = true
			}
		case event.Result:
			res = e
		}
	}
	close(release)
	if res.Text != "parent turn done" {
		t.Fatalf("parent result = %q", res.Text)
	}
	if started != 1 {
		t.Errorf("task_started emitted %d times for one agent, want once", started)
	}
	raw, _ := json.Marshal(h.sess.History())
	hist := string(raw)
	if n := strings.Count(hist, "moved this agent to the background"); n != 1 {
		t.Fatalf("receipt in history %d times", n)
	}
	if strings.Contains(hist, "slow findings") {
		t.Fatal("the detached agent's findings reached the parent's turn")
	}
	if n, err := h.sess.agents.WaitBackground(t.Context()); err != nil || n != 1 {
		t.Fatalf("WaitBackground = %d, %v", n, err)
	}
	res = result(t, h.send(t, "what did it find?"))
	if res.Text != "report received" {
		t.Errorf("next turn = %q", res.Text)
	}
	last := h.srv.Requests()[len(h.srv.Requests())-1]
	if !strings.Contains(string(last.Body), "slow findings: 9") || !strings.Contains(string(last.Body), "<task-notification>") {
		t.Errorf("the parent's next request lacks the notification: %s", last.Body)
	}
}
