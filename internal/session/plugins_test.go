package session

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/gittest"
	"github.com/keel-dev/keel/internal/mcphost/mcptest"
	"github.com/keel-dev/keel/internal/plugin"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

// kitMarketplace is a git repository holding a marketplace with one plugin, kit, that brings
// every kind of component: a command, a hook on Bash (a script found through
// ${CLAUDE_PLUGIN_ROOT}, writing into ${CLAUDE_PLUGIN_DATA}), an MCP server (this test binary,
// re-executed), an agent and a bin/ program.
func kitMarketplace(t *testing.T) *gittest.Repo {
	t.Helper()
	cmd, args, env := mcptest.Command(mcptest.ModeEverything)
	env["KIT_ROOT"] = "${CLAUDE_PLUGIN_ROOT}"
	mcpJSON, _ := json.Marshal(map[string]any{"echo": map[string]any{"command": cmd, "args": args, "env": env}})
	r := gittest.New(t)
	r.Write(".claude-plugin/marketplace.json", `{"name": "e2e-market", "owner": {"name": "Tests"},
  "plugins": [{"name": "kit", "source": "./kit", "description": "A plugin with everything."}]}`)
	r.Write("kit/.claude-plugin/plugin.json", `{"name": "kit", "version": "0.1.0", "description": "Everything."}`)
	r.Write("kit/commands/greet.md", "---\ndescription: Greets.\n---\nKIT-GREETING: say hello to $ARGUMENTS.\n")
	r.Write("kit/hooks/hooks.json", `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "sh \"${CLAUDE_PLUGIN_ROOT}/hooks/mark.sh\""}]}]}}`)
	r.Write("kit/hooks/mark.sh", "cat >/dev/null\necho fired >> \"$CLAUDE_PLUGIN_DATA/hook.log\"\n")
	r.Write("kit/.mcp.json", string(mcpJSON))
	r.Write("kit/agents/helper.md", "---\nname: helper\ndescription: Helps with kit things.\n---\nKIT-HELPER-SYSTEM: you help.\n")
	r.Write("kit/bin/kit-tool", "#!/bin/sh\necho from-kit-bin\n")
	if err := os.Chmod(filepath.Join(r.Dir, "kit/bin/kit-tool"), 0o755); err != nil {
		t.Fatal(err)
	}
	r.Commit("kit")
	return r
}

func eventsOf[T event.Event](events []event.Event) []T {
	var out []T
	for _, e := range events {
		if x, ok := e.(T); ok {
			out = append(out, x)
		}
	}
	return out
}

// TestPluginEndToEnd: a marketplace in a local git repository is added, a plugin installed
// from it; in a session its command runs, its hook fires on a tool call, its program is on
// the Bash tool's PATH, its MCP server's tool is called and its agent spawned. Disabled, all
// of it is gone at the next request; uninstalled, it is gone from disk.
func TestPluginEndToEnd(t *testing.T) {
	repo := kitMarketplace(t)
	home := t.TempDir()
	m := &plugin.Manager{Home: home, GitEnv: gittest.Env(), Confirm: func(plugin.ConsentRequest) (bool, error) { return true, nil }}
	if _, err := m.AddMarketplace(t.Context(), "file://"+repo.Dir); err != nil {
		t.Fatal(err)
	}
	rec, err := m.Install(t.Context(), "kit@e2e-market")
	if err != nil {
		t.Fatal(err)
	}
	const mcpTool = "mcp__plugin_kit_echo__echo"
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "greet", When: scripted.Match{UserText: "KIT-GREETING: say hello to world"}, Times: 1,
			Reply: []scripted.Block{scripted.ToolUse("Bash", map[string]any{"command": "kit-tool"})}},
		{Name: "mcp", When: scripted.Match{ToolResult: "Bash", Contains: "from-kit-bin"}, Times: 1,
			Reply: []scripted.Block{scripted.ToolUse(mcpTool, map[string]any{"text": "via the plugin"})}},
		{Name: "spawn", When: scripted.Match{ToolResult: mcpTool}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Agent",
			map[string]any{"description": "help", "prompt": "HELP-TASK", "subagent_type": "kit:helper"})}},
		{Name: "helper", When: scripted.Match{System: "KIT-HELPER-SYSTEM"}, Reply: []scripted.Block{scripted.Text("helper reporting")}},
		{Name: "done", When: scripted.Match{ToolResult: "Agent"}, Times: 1, Reply: []scripted.Block{scripted.Text("turn one done")}},
		{Name: "after", When: scripted.Match{UserText: "after disabling"}, Times: 1,
			Reply: []scripted.Block{scripted.ToolUse("Bash", map[string]any{"command": "kit-tool; echo rc=$?"})}},
		{Name: "end", Reply: []scripted.Block{scripted.Text("ok")}},
	}}
	h := newHarness(t, sc, Options{Home: home, PermissionMode: "bypassPermissions"})

	events := h.send(t, "/kit:greet world")
	if res := result(t, events); res.Text != "turn one done" || res.IsError {
		t.Fatalf("result %q (error %v)", res.Text, res.IsError)
	}
	init := eventsOf[event.Init](events)[0]
	if len(init.Plugins) != 1 || init.Plugins[0].Source != "kit@e2e-market" || init.Plugins[0].Version != "0.1.0" || len(init.PluginErrors) != 0 {
		t.Errorf("init plugins %+v, errors %+v", init.Plugins, init.PluginErrors)
	}
	if !slices.Contains(init.Skills, "kit:greet") || !slices.Contains(init.Agents, "kit:helper") || !slices.Contains(init.Tools, mcpTool) {
		t.Errorf("init: skills %v, agents %v, tools %v", init.Skills, init.Agents, init.Tools)
	}
	if i := slices.IndexFunc(init.MCPServers, func(s event.MCPServerStatus) bool { return s.Name == "plugin_kit_echo" }); i < 0 || init.MCPServers[i].Source != "plugin" {
		t.Errorf("init mcp servers %+v", init.MCPServers)
	}
	reqs := h.srv.Requests()
	if !strings.Contains(string(reqs[2].Body), "via the plugin") {
		t.Error("the MCP server's answer did not reach the model")
	}
	if !strings.Contains(string(reqs[len(reqs)-1].Body), "helper reporting") {
		t.Error("the plugin's agent did not report")
	}
	hookLog := filepath.Join(home, "plugins", "data", "kit-e2e-market", "hook.log")
	if got, err := os.ReadFile(hookLog); err != nil || string(got) != "fired\n" {
		t.Fatalf("the plugin's PreToolUse hook on Bash: %q, %v", got, err)
	}

	// Disabled: at the next request boundary the command, hook, bin/, MCP server and agent are
	// gone, and the change is declared to the cache watcher (no cache break reported).
	if err := m.Disable("kit@e2e-market"); err != nil {
		t.Fatal(err)
	}
	events = h.send(t, "/kit:greet again")
	if res := result(t, events); !res.IsError || !strings.Contains(res.Text, "kit:greet") {
		t.Errorf("a disabled plugin's command ran: %+v", res)
	}
	init = eventsOf[event.Init](events)[0]
	if len(init.Plugins) != 0 || slices.Contains(init.Tools, mcpTool) || slices.Contains(init.Agents, "kit:helper") || slices.Contains(init.Skills, "kit:greet") {
		t.Errorf("after disabling, init still has the plugin: %+v", init)
	}
	before := len(h.srv.Requests())
	events = h.send(t, "after disabling")
	reqs = h.srv.Requests()[before:]
	if tools := toolNames(t, reqs[0].Body); slices.Contains(tools, mcpTool) {
		t.Errorf("the disabled plugin's MCP tool is still offered: %v", tools)
	}
	if !strings.Contains(string(reqs[1].Body), "rc=127") {
		t.Errorf("kit-tool still runs after disabling: %s", reqs[1].Body)
	}
	if got, _ := os.ReadFile(hookLog); string(got) != "fired\n" {
		t.Errorf("the disabled plugin's hook fired: %q", got)
	}
	if breaks := eventsOf[event.CacheBreak](events); len(breaks) != 0 {
		t.Errorf("cache breaks after the declared plugin change: %+v", breaks)
	}
	if _, ok := h.sess.agents.runner.Definitions().Get("kit:helper"); ok {
		t.Error("the disabled plugin's agent can still be spawned")
	}

	// Uninstalled: the copy and the data folder go.
	if err := m.Uninstall("kit@e2e-market"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(rec.InstallPath); err == nil {
		t.Error("the installed copy is still there")
	}
	if _, err := os.Stat(filepath.Dir(hookLog)); err == nil {
		t.Error("the data folder is still there")
	}
	result(t, h.send(t, "after uninstalling"))
}

// A session's tool pool and listing stay byte-stable while no plugin changes: the stamp is
// checked at each Send, and nothing is re-read.
func TestPluginsUnchangedKeepPrefix(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "p", "commands"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p", "commands", "c.md"), []byte("---\ndescription: c\n---\nC-BODY"), 0o644); err != nil {
		t.Fatal(err)
	}
	sc := &scripted.Scenario{Rules: []scripted.Rule{{Reply: []scripted.Block{scripted.Text("ok")}}}}
	h := newHarness(t, sc, Options{Plugins: []plugin.DirSpec{{Path: filepath.Join(dir, "p"), Kind: plugin.OriginSDK}, {Path: filepath.Join(dir, "none")}}})
	first := h.send(t, "/p:c")
	second := h.send(t, "/p:c")
	reqs := h.srv.Requests()
	if tools := func(b []byte) string {
		var r struct{ Tools json.RawMessage }
		_ = json.Unmarshal(b, &r)
		return string(r.Tools)
	}; tools(reqs[0].Body) != tools(reqs[1].Body) {
		t.Error("the tool list changed between two requests with the same plugins")
	}
	if n := len(eventsOf[event.CacheBreak](second)); n != 0 {
		t.Errorf("%d cache breaks with nothing changed", n)
	}
	init := eventsOf[event.Init](first)[0]
	if len(init.PluginErrors) != 1 || init.PluginErrors[0].Plugin != "inline[1]" || init.PluginErrors[0].Type != "path-not-found" {
		t.Errorf("plugin errors %+v", init.PluginErrors)
	}
	if len(init.Plugins) != 1 || init.Plugins[0].Source != "p@inline" || !strings.Contains(string(reqs[0].Body), "C-BODY") {
		t.Errorf("plugins %+v", init.Plugins)
	}
}
