package control

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel/internal/agentdef"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/mcphost"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/plugin"
	"github.com/keel-dev/keel/internal/provider/connect"
	"github.com/keel-dev/keel/internal/skill"
)

// MinimalSystemPrompt is the system prompt of an SDK session that set none: the SDK sends an
// empty custom prompt then, and Claude Code answers with a one-line identity instead of its
// coding-agent prompt. keel does the same; the environment and memory sections still follow.
const MinimalSystemPrompt = "You are an agent built on keel, driven through the Claude Agent SDK."

// Init is what the SDK's initialize request asks of the session, and the seams through which
// the session reaches back to the SDK. The CLI turns it into session options.
type Init struct {
	// Received is false when no initialize came before the first prompt.
	Received bool
	// SystemPrompt, when non-nil, replaces keel's system prompt (an SDK systemPrompt string;
	// an empty one becomes [MinimalSystemPrompt]). Nil keeps keel's prompt (the claude_code
	// preset); AppendSystemPrompt is added to either.
	SystemPrompt       *string
	AppendSystemPrompt string
	// Agents are programmatic subagents, {"name": {"description", "prompt", …}}, the shape
	// --agents takes.
	Agents json.RawMessage
	// JSONSchema asks for a final answer matching it (the SDK's outputFormat).
	JSONSchema json.RawMessage
	// Hooks are the SDK's hook callbacks; CallHook runs one through hook_callback.
	Hooks    []hooks.Callback
	CallHook hooks.CallFunc
	// SDKServers are the SDK's in-process MCP servers, as transports that carry their
	// messages over mcp_message requests.
	SDKServers map[string]mcp.Transport
	// MCPConfig is MCP servers sent in initialize rather than on the command line, in
	// .mcp.json's shape; Settings likewise a settings object; DisallowedTools the tools to
	// remove. Empty when the SDK used flags.
	MCPConfig       string
	Settings        string
	DisallowedTools []string
	// Plugins are the SDK's plugins option sent in initialize (pluginsViaInitialize) rather
	// than as --plugin-dir flags.
	Plugins []PluginDir
	// Asker puts permission questions to the SDK (can_use_tool); nil unless keel was started
	// with --permission-prompt-tool stdio.
	Asker permission.Asker
	// Elicit puts an MCP server's elicitation to the SDK (its onElicitation callback; the SDK
	// declines when it registered none). It is what an MCP client's elicitation seam calls.
	Elicit mcphost.ElicitFunc
	// Ignored names the fields keel accepted but does not act on, for a notice.
	Ignored []string

	sdkServers []string
}

// PluginDir is one entry of the SDK's plugins option: {type: "local", path, skipMcpDiscovery}.
type PluginDir struct {
	Type    string `json:"type"`
	Path    string `json:"path"`
	SkipMCP bool   `json:"skipMcpDiscovery"`
}

// initializeRequest is the part of the SDK's initialize request keel reads.
type initializeRequest struct {
	Hooks map[string][]struct {
		Matcher         string   `json:"matcher"`
		HookCallbackIDs []string `json:"hookCallbackIds"`
		Timeout         float64  `json:"timeout"`
	} `json:"hooks"`
	SDKMCPServers      []string        `json:"sdkMcpServers"`
	JSONSchema         json.RawMessage `json:"jsonSchema"`
	SystemPrompt       json.RawMessage `json:"systemPrompt"`
	AppendSystemPrompt string          `json:"appendSystemPrompt"`
	Agents             json.RawMessage `json:"agents"`
	MCPServers         json.RawMessage `json:"mcpServers"`
	Settings           json.RawMessage `json:"settings"`
	DisallowedTools    []string        `json:"disallowedTools"`
	Plugins            []PluginDir     `json:"plugins"`
}

// ignoredInit are initialize fields keel accepts without acting on them.
var ignoredInit = []string{"planModeInstructions", "systemPromptSnapshot", "appendSubagentSystemPrompt", "toolAliases",
	"codeRunningMcpTools", "excludeDynamicSections", "title", "skills", "webSearchIsolationExemptMcpServers",
	"promptSuggestions", "agentProgressSummaries", "forwardSubagentText", "supportedDialogKinds", "perTaskStopAffordance",
	"rapidFollowupPreempt", "forwardNestedSubagentToolCalls", "workspaceTrust", "managedSettings"}

// parseInit reads an initialize request into an Init; a malformed one is an error for the
// response, and the session is not opened from it.
func parseInit(raw json.RawMessage) (*Init, error) {
	var req initializeRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	init := &Init{Received: true, AppendSystemPrompt: req.AppendSystemPrompt, DisallowedTools: req.DisallowedTools, sdkServers: req.SDKMCPServers}
	if len(req.SystemPrompt) > 0 && string(req.SystemPrompt) != "null" {
		text, err := systemPromptText(req.SystemPrompt)
		if err != nil {
			return nil, err
		}
		if strings.TrimSpace(text) == "" {
			text = MinimalSystemPrompt
		}
		init.SystemPrompt = &text
	}
	if len(req.Agents) > 0 && string(req.Agents) != "null" {
		var agents map[string]json.RawMessage
		if err := json.Unmarshal(req.Agents, &agents); err != nil {
			return nil, fmt.Errorf("initialize: agents is not an object of agent definitions: %w", err)
		}
		init.Agents = req.Agents
	}
	if len(req.JSONSchema) > 0 && string(req.JSONSchema) != "null" {
		var schema map[string]any
		if err := json.Unmarshal(req.JSONSchema, &schema); err != nil {
			return nil, fmt.Errorf("initialize: jsonSchema is not a JSON schema object: %w", err)
		}
		init.JSONSchema = req.JSONSchema
	}
	events := make([]string, 0, len(req.Hooks))
	for ev := range req.Hooks {
		events = append(events, ev)
	}
	sort.Strings(events)
	for _, ev := range events {
		for _, m := range req.Hooks[ev] {
			init.Hooks = append(init.Hooks, hooks.Callback{Event: ev, Matcher: m.Matcher, IDs: m.HookCallbackIDs, Timeout: m.Timeout})
		}
	}
	if len(req.MCPServers) > 0 && string(req.MCPServers) != "null" {
		b, err := json.Marshal(map[string]json.RawMessage{"mcpServers": req.MCPServers})
		if err != nil {
			return nil, fmt.Errorf("initialize: mcpServers: %w", err)
		}
		init.MCPConfig = string(b)
	}
	if len(req.Settings) > 0 && string(req.Settings) != "null" {
		init.Settings = string(req.Settings)
	}
	for i, p := range req.Plugins {
		if p.Type != "local" || p.Path == "" {
			return nil, fmt.Errorf("initialize: plugins[%d]: type %q with path %q; only {type: \"local\", path} is supported", i, p.Type, p.Path)
		}
		init.Plugins = append(init.Plugins, p)
	}
	var all map[string]json.RawMessage
	_ = json.Unmarshal(raw, &all)
	for _, k := range ignoredInit {
		if v, ok := all[k]; ok && string(v) != "null" && string(v) != "false" && string(v) != "[]" {
			init.Ignored = append(init.Ignored, k)
		}
	}
	return init, nil
}

// systemPromptText joins the SDK's systemPrompt: a list of blocks (the SDK sends a string as
// a one-element list), or a plain string.
func systemPromptText(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []string
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("initialize: systemPrompt is neither a string nor a list of strings")
	}
	return strings.Join(parts, "\n\n"), nil
}

// slashCommand, agentInfo, modelInfo and accountInfo are the Agent SDK's SlashCommand,
// AgentInfo, ModelInfo and AccountInfo.
type slashCommand struct {
	Name         string `json:"name"`
	Description  string `json:"description"`
	ArgumentHint string `json:"argumentHint"`
	Builtin      bool   `json:"builtin,omitempty"`
}

type agentInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Model       string `json:"model,omitempty"`
}

type modelInfo struct {
	Value         string `json:"value"`
	ResolvedModel string `json:"resolvedModel,omitempty"`
	DisplayName   string `json:"displayName"`
	Description   string `json:"description"`
}

type accountInfo struct {
	TokenSource  string `json:"tokenSource"`
	APIKeySource string `json:"apiKeySource"`
	APIProvider  string `json:"apiProvider"`
}

// builtinCommands are the slash commands keel runs itself in a headless session.
var builtinCommands = []slashCommand{
	{Name: "compact", Description: "Summarise the conversation so far to free context", ArgumentHint: "<optional instructions>", Builtin: true},
}

// Optional abilities of a session that the initialize response reports.
type (
	skiller     interface{ Skills() []skill.Skill }
	agentLister interface {
		AgentDefinitions() []*agentdef.Definition
	}
)

// initializeResponse describes the open session to the SDK.
func (c *controller) initializeResponse() map[string]any {
	commands := slices.Clone(builtinCommands)
	if s, ok := c.sess.(skiller); ok {
		for _, sk := range s.Skills() {
			if sk.UserInvocable {
				commands = append(commands, slashCommand{Name: sk.Name, Description: sk.Description, ArgumentHint: sk.ArgumentHint})
			}
		}
	}
	agents := []agentInfo{}
	if a, ok := c.sess.(agentLister); ok {
		for _, d := range a.AgentDefinitions() {
			agents = append(agents, agentInfo{Name: d.Name, Description: d.Description, Model: d.Model})
		}
	}
	resp := map[string]any{
		"commands":                commands,
		"agents":                  agents,
		"output_style":            "default",
		"available_output_styles": []string{"default"},
		"models":                  c.models(),
		"account":                 accountInfo{TokenSource: "none", APIKeySource: c.cfg.APIKeySource, APIProvider: "firstParty"},
		"pid":                     os.Getpid(),
		"claude_code_version":     c.cfg.Version,
		"current_permission_mode": c.sess.PermissionMode(),
		"hooks_applied":           true,
		// keel has no onFailure semantics for hooks; the SDK refuses "block" hooks then.
		"hook_on_failure_supported": false,
	}
	if c.init.MCPConfig != "" {
		resp["mcp_servers_applied"] = true
	}
	if c.init.Settings != "" {
		resp["settings_applied"] = true
	}
	if len(c.init.DisallowedTools) > 0 {
		resp["disallowed_tools_applied"] = true
	}
	if len(c.init.Plugins) > 0 {
		resp["plugins_applied"] = c.pluginsApplied()
	}
	return resp
}

// pluginsApplied says every plugin initialize listed is loaded: none of them is among the
// session's plugin errors as a path that did not load.
func (c *controller) pluginsApplied() bool {
	pe, ok := c.sess.(interface {
		PluginErrors() []plugin.Error
		Cwd() string
	})
	if !ok {
		return false
	}
	for _, e := range pe.PluginErrors() {
		for _, p := range c.init.Plugins {
			path := p.Path
			if !filepath.IsAbs(path) {
				path = filepath.Join(pe.Cwd(), path)
			}
			if e.Path == path {
				return false
			}
		}
	}
	return true
}

// models lists the session's model and the aliases --model and set_model take.
func (c *controller) models() []modelInfo {
	current := c.sess.Model()
	out := []modelInfo{{Value: "default", ResolvedModel: current, DisplayName: "Default", Description: "The session's model (" + current + ")"}}
	for _, alias := range []string{"opus", "sonnet", "haiku"} {
		id := connect.ResolveModel(alias)
		out = append(out, modelInfo{Value: alias, ResolvedModel: id, DisplayName: strings.ToUpper(alias[:1]) + alias[1:], Description: id})
	}
	return out
}

// APIKeySource names where the Anthropic credentials come from, as the SDK's init line and
// account say it: ANTHROPIC_API_KEY, apiKeyHelper… or "none".
func APIKeySource(getenv func(string) string) string {
	switch {
	case getenv("ANTHROPIC_API_KEY") != "":
		return "ANTHROPIC_API_KEY"
	case getenv("ANTHROPIC_AUTH_TOKEN") != "":
		return "ANTHROPIC_AUTH_TOKEN"
	}
	return "none"
}
