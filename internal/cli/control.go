package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel/internal/agentdef"
	"github.com/keel-dev/keel/internal/control"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/mcphost"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/plugin"
	"github.com/keel-dev/keel/internal/render"
	"github.com/keel-dev/keel/internal/runconfig"
	"github.com/keel-dev/keel/internal/session"
	"github.com/keel-dev/keel/internal/skill"
)

// stdioPromptTool is the --permission-prompt-tool value with which the Agent SDK asks to
// answer permission questions itself, over the control protocol.
const stdioPromptTool = "stdio"

// runControl serves the Agent SDK's control protocol on stdin and stdout
// (--input-format stream-json): the session opens once initialize has said what it needs.
func (a *app) runControl(ctx context.Context, f *runFlags) error {
	if f.outputFormat != "stream-json" {
		return usageError{fmt.Errorf("--input-format stream-json needs --output-format stream-json, not %s", f.outputFormat)}
	}
	base, err := a.headlessConfig(f)
	if err != nil {
		return err
	}
	// The SDK waits for this process; agents outlive it only in the supervisor's own runs.
	base.Supervisor = runconfig.Supervisor{}
	err = control.Run(ctx, control.Config{
		In: a.std.In, Out: a.std.Out,
		Open: func(ctx context.Context, init *control.Init) (control.Session, error) {
			cfg, seams, err := withInit(base, a.seams(), init)
			if err != nil {
				return nil, err
			}
			sess, err := a.openSession(ctx, cfg, seams)
			if err != nil {
				return nil, err
			}
			return controlSession{sess}, nil
		},
		Render:         a.streamOptions(f),
		PromptStdio:    f.mcp.permissionPromptTool == stdioPromptTool,
		Notices:        f.sdk.ignoredNotices(),
		Version:        Version,
		APIKeySource:   control.APIKeySource(a.getenv),
		WaitBackground: !f.noWait,
		SessionState:   a.env.SDKReadsSessionState,
		Logger:         a.logger,
	})
	if err == control.ErrTurnFailed {
		return exitCodeError{code: exitError}
	}
	return err
}

// controlSessionMethods are the methods the control protocol looks for on its session
// (its optional interfaces, asserted at run time): the assertion below makes a method that
// moves off the session a compile error here rather than a request that quietly fails.
type controlSessionMethods interface {
	control.Session
	WorkingDirs() []string
	PersistPermissions(updates []permission.Update) error
	WaitBackground(ctx context.Context) (int, error)
	SendPending(ctx context.Context) func(yield func(event.Event, error) bool)
	WaitTasks(ctx context.Context) (int, error)
	BackgroundOutstanding() int
	Skills() []skill.Skill
	AgentDefinitions() []*agentdef.Definition
	PluginErrors() []plugin.Error
	Cwd() string
	SwitchModel(ctx context.Context, model, source string) error
	SetMaxThinkingTokens(n int64)
	MCPStatus() []mcphost.ServerStatus
	ReconnectMCP(ctx context.Context, name string) error
	MCPServerTools(ctx context.Context) map[string][]control.MCPTool
	MCPServerConfig(name string) (mcphost.ServerConfig, bool)
	ToggleMCP(ctx context.Context, name string, enabled bool) error
	SetMCPServers(ctx context.Context, servers map[string]json.RawMessage, transports map[string]mcp.Transport) (added, removed []string, errs map[string]string, err error)
	ContextUsage(ctx context.Context) control.ContextUsage
	RewindFiles(ctx context.Context, userMessageID string, dryRun bool) (changed []string, err error)
	StopTask(ctx context.Context, id string) error
	EffectiveSettings() (json.RawMessage, []control.SettingsSource)
	ApplyFlagSettings(ctx context.Context, settings json.RawMessage) error
	UpdateSettings(ctx context.Context, destination string, settings json.RawMessage) error
	ReloadSkills(ctx context.Context) error
}

var _ controlSessionMethods = controlSession{}

// controlSession adapts a session to the control protocol's optional interfaces where their
// types or names differ; everything else is the session's own.
type controlSession struct{ *session.Session }

func (s controlSession) Model() string { return s.Switches().Model() }

func (s controlSession) SetModel(model string) { s.Switches().SetModel(model) }

func (s controlSession) SwitchModel(ctx context.Context, model, source string) error {
	return s.Switches().SwitchModel(ctx, model, source)
}

func (s controlSession) SetMaxThinkingTokens(n int64) { s.Switches().SetMaxThinkingTokens(n) }

func (s controlSession) Skills() []skill.Skill { return s.Session.Skills().All() }

func (s controlSession) ReloadSkills(ctx context.Context) error {
	return s.Session.Skills().Reload(ctx)
}

func (s controlSession) PluginErrors() []plugin.Error { return s.Plugins().Errors() }

func (s controlSession) RewindFiles(ctx context.Context, userMessageID string, dryRun bool) ([]string, error) {
	return s.Undo().RewindFiles(ctx, userMessageID, dryRun)
}

func (s controlSession) WorkingDirs() []string { return s.Config().WorkingDirs() }

func (s controlSession) PersistPermissions(updates []permission.Update) error {
	return s.Config().PersistPermissions(updates)
}

func (s controlSession) ApplyFlagSettings(ctx context.Context, raw json.RawMessage) error {
	return s.Config().ApplyFlagSettings(ctx, raw)
}

func (s controlSession) UpdateSettings(ctx context.Context, destination string, raw json.RawMessage) error {
	return s.Config().UpdateSettings(ctx, destination, raw)
}

func (s controlSession) MCPStatus() []mcphost.ServerStatus { return s.MCP().Status() }

func (s controlSession) MCPServerTools(ctx context.Context) map[string][]control.MCPTool {
	out := map[string][]control.MCPTool{}
	for server, tools := range s.MCP().ServerTools(ctx) {
		for _, t := range tools {
			out[server] = append(out[server], control.MCPTool{Name: t.Name, Description: t.Description, Annotations: t.Annotations})
		}
	}
	return out
}

func (s controlSession) MCPServerConfig(name string) (mcphost.ServerConfig, bool) {
	return s.MCP().ServerConfig(name)
}

func (s controlSession) WaitBackground(ctx context.Context) (int, error) {
	return s.Agents().WaitBackground(ctx)
}

func (s controlSession) SendPending(ctx context.Context) func(yield func(event.Event, error) bool) {
	return s.Agents().SendPending(ctx)
}

func (s controlSession) WaitTasks(ctx context.Context) (int, error) { return s.Agents().WaitTasks(ctx) }

func (s controlSession) BackgroundOutstanding() int { return s.Agents().Outstanding() }

func (s controlSession) AgentDefinitions() []*agentdef.Definition { return s.Agents().Definitions() }

func (s controlSession) StopTask(ctx context.Context, id string) error {
	return s.Agents().StopTask(ctx, id)
}

func (s controlSession) ReconnectMCP(ctx context.Context, name string) error {
	return s.MCP().Reconnect(ctx, name)
}

func (s controlSession) ToggleMCP(ctx context.Context, name string, enabled bool) error {
	return s.MCP().Toggle(ctx, name, enabled)
}

func (s controlSession) SetMCPServers(ctx context.Context, servers map[string]json.RawMessage, transports map[string]mcp.Transport) (added, removed []string, errs map[string]string, err error) {
	return s.MCP().SetServers(ctx, servers, transports)
}

func (s controlSession) ContextUsage(ctx context.Context) control.ContextUsage {
	u := s.Inspect().ContextUsage(ctx)
	out := control.ContextUsage{Window: u.Window, Model: u.Model}
	for _, p := range u.Parts {
		out.Categories = append(out.Categories, control.ContextCategory{ID: p.ID, Name: p.Name, Tokens: p.Tokens, Kind: p.Kind})
	}
	for _, m := range u.Memory {
		out.Memory = append(out.Memory, control.MemoryUsage{Path: m.Path, Type: m.Kind, Tokens: m.Tokens})
	}
	return out
}

func (s controlSession) EffectiveSettings() (json.RawMessage, []control.SettingsSource) {
	eff, files := s.Config().EffectiveSettings()
	var out []control.SettingsSource
	for _, f := range files {
		out = append(out, control.SettingsSource{Source: f.Scope, Path: f.Path})
	}
	return eff, out
}

// streamOptions are the stream-json renderer's options from the flags.
func (a *app) streamOptions(f *runFlags) render.StreamOptions {
	return render.StreamOptions{
		IncludePartial: f.sdk.includePartial, ReplayUserMessages: f.sdk.replayUserMessages, IncludeHookEvents: f.sdk.includeHookEvents,
		Version: Version, APIKeySource: control.APIKeySource(a.getenv),
	}
}

// withInit shapes the session by what the SDK's initialize request carried: configuration
// (prompts, agents, schema, settings, MCP servers) and the SDK's callbacks.
func withInit(cfg runconfig.Config, seams session.Seams, init *control.Init) (runconfig.Config, session.Seams, error) {
	if init.SystemPrompt != nil {
		cfg.SystemPrompt = *init.SystemPrompt
	}
	if init.AppendSystemPrompt != "" {
		cfg.AppendSystemPrompt = strings.TrimSpace(cfg.AppendSystemPrompt + "\n\n" + init.AppendSystemPrompt)
	}
	if len(init.Agents) > 0 {
		merged, err := mergeAgents(cfg.Agents, init.Agents)
		if err != nil {
			return cfg, seams, err
		}
		cfg.Agents = merged
	}
	if len(init.JSONSchema) > 0 {
		cfg.JSONSchema = init.JSONSchema
	}
	seams.HookCallbacks, seams.CallHook = init.Hooks, init.CallHook
	if init.Asker != nil {
		seams.Asker = init.Asker
	}
	seams.MCPTransports = init.SDKServers
	// The SDK may add servers later (mcp_set_servers), even to a session that starts with none.
	cfg.MCP.Dynamic = true
	// The SDK answers MCP servers' questions through its onElicitation callback (it declines
	// when the program registered none).
	seams.Elicit = init.Elicit
	if init.MCPConfig != "" {
		cfg.MCP.Configs = append(cfg.MCP.Configs, init.MCPConfig)
	}
	if init.Settings != "" {
		cfg.Settings = append(cfg.Settings, init.Settings)
	}
	cfg.DisallowedTools = append(cfg.DisallowedTools, init.DisallowedTools...)
	for _, p := range init.Plugins {
		cfg.Plugins = append(cfg.Plugins, runconfig.Plugin{Path: p.Path, NoMCP: p.SkipMCP, SDK: true})
	}
	return cfg, seams, nil
}

// mergeAgents joins --agents JSON and initialize's agents; initialize's win by name.
func mergeAgents(flag string, init json.RawMessage) (string, error) {
	all := map[string]json.RawMessage{}
	if flag != "" {
		if err := json.Unmarshal([]byte(flag), &all); err != nil {
			return "", usageError{fmt.Errorf("--agents is not a JSON object of agent definitions: %w", err)}
		}
	}
	var extra map[string]json.RawMessage
	if err := json.Unmarshal(init, &extra); err != nil {
		return "", fmt.Errorf("initialize agents: %w", err)
	}
	for k, v := range extra {
		all[k] = v
	}
	b, err := json.Marshal(all)
	return string(b), err
}
