package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel/internal/agentdef"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/mcphost"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/skill"
	"github.com/keel-dev/keel/internal/subagent"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/trust"
)

// MCPOptions configure the session's MCP servers.
type MCPOptions struct {
	// Configs are --mcp-config values (a file or JSON text each); Strict uses only them.
	Configs []string
	Strict  bool
	// InProcess are Go SDK servers run inside this process, by name; Transports are servers
	// reached through the program driving keel (the Agent SDK's in-process servers).
	InProcess  map[string]*mcp.Server
	Transports map[string]mcp.Transport
	// ToolSearch is auto (default), on or off.
	ToolSearch string
	// Environ expands ${VAR} in configurations and is the environment of stdio servers; nil
	// means this process's.
	Environ []string
	// ConnectTimeout (MCP_TIMEOUT), ToolTimeout (MCP_TOOL_TIMEOUT) and MaxOutputTokens
	// (MAX_MCP_OUTPUT_TOKENS); zero means the defaults.
	ConnectTimeout  time.Duration
	ToolTimeout     time.Duration
	MaxOutputTokens int
	// PermissionPromptTool names an MCP tool (mcp__server__tool) that answers permission
	// questions instead of the asker.
	PermissionPromptTool string
	// Authorize sends the user to the OAuth authorization page of the server called server
	// when it asks (an interactive session): on connecting, on a step-up, and for LoginMCP.
	// Nil leaves servers without usable tokens in needs-auth, and `keel mcp login` fixes
	// that. See [mcphost.OAuthOptions].
	Authorize func(ctx context.Context, server, authURL string) error
	// ClientSecret is $MCP_CLIENT_SECRET, the secret of pre-registered OAuth clients whose
	// configuration gives none.
	ClientSecret string
	// Elicit asks the user an MCP server's question (the TUI's form, the Agent SDK's
	// elicitation control request); nil means no one can be asked, and only Elicitation hooks
	// answer. See [mcphost.ElicitFunc].
	Elicit mcphost.ElicitFunc
	// Dynamic keeps an MCP manager even when no server is configured, so servers can be
	// added while the session runs ([Session.SetMCPServers], the Agent SDK's
	// mcp_set_servers).
	Dynamic bool
}

// mcpEnviron is the environment of stdio servers and of ${VAR} expansion in configurations,
// as a list and as a map.
func mcpEnviron(o MCPOptions) ([]string, map[string]string) {
	environ := o.Environ
	if environ == nil {
		environ = os.Environ()
	}
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return environ, env
}

// startMCP connects the session's MCP servers.
func (s *Session) startMCP(ctx context.Context) {
	window := s.switches.contextWindow()
	m, notices := OpenMCP(ctx, s.opts.MCP, MCPSetup{
		Home: s.opts.Home, ProjectDir: s.projectDir, Cwd: s.opts.Cwd, AddDirs: s.state.AdditionalDirs,
		Settings: s.settings, Trust: s.opts.Trust, Version: s.opts.Version, ContextWindow: window, Logger: s.logger,
		Elicit: newElicitation(s).answerer(), Plugins: s.plug.plugins().MCPServers(), Traceparent: s.tel.serverTraceparent,
		Confine: s.serverConfine(),
	})
	s.mcp = m
	s.notices = append(s.notices, notices...)
	if m != nil {
		s.notices = append(s.notices, mcpStartNotices(m.Status())...)
	}
}

// mcpStartNotices tells the user about servers that did not start and why: their tools are
// missing from the session, and nothing else would say so in a headless run.
func mcpStartNotices(status []mcphost.ServerStatus) []event.Notice {
	var out []event.Notice
	for _, st := range status {
		switch {
		case st.Status == mcphost.StatusFailed:
			out = append(out, event.Notice{Level: "warn", Text: fmt.Sprintf("MCP server %q failed to start: %s", st.Name, st.Reason)})
		case st.Status == mcphost.StatusNeedsAuth:
			out = append(out, event.Notice{Level: "warn", Text: fmt.Sprintf("MCP server %q needs authorization (%s); run `keel mcp login %s`", st.Name, st.Reason, st.Name)})
		case st.Status == mcphost.StatusDisabled && strings.Contains(st.Reason, "not trusted"):
			out = append(out, event.Notice{Level: "warn", Text: fmt.Sprintf("MCP server %q not started: %s", st.Name, st.Reason)})
		}
	}
	return out
}

// MCPSetup is what connecting MCP servers needs to know of the session around them.
type MCPSetup struct {
	Home, ProjectDir, Cwd string
	AddDirs               []string
	Settings              *settings.Settings
	// Trust counts the workspace as trusted without a recorded trust (--trust).
	Trust         bool
	Version       string
	ContextWindow int64
	Logger        *slog.Logger
	// Elicit answers servers' questions; nil leaves the capability unadvertised.
	Elicit mcphost.ElicitFunc
	// Plugins are the enabled plugins' servers (scope plugin).
	Plugins []mcphost.ServerConfig
	// Traceparent is the TRACEPARENT a stdio server starts under (telemetry); nil for none.
	Traceparent func() string
	// Confine runs stdio servers inside the sandbox (sandbox.wrapMcpServers); nil runs them
	// as they are.
	Confine func(*exec.Cmd) (func(), error)
}

// OpenMCP loads the MCP configuration from every source and connects the enabled servers in
// parallel; servers that fail are reported in their status and nothing else waits for them.
// It returns nil when no server is configured, unless o.Dynamic asks for a manager anyway. `keel mcp list` uses it too.
func OpenMCP(ctx context.Context, o MCPOptions, st MCPSetup) (*mcphost.Manager, []event.Notice) {
	environ, env := mcpEnviron(o)
	var notices []event.Notice
	cfg := mcphost.Load(mcphost.LoadOptions{Home: st.Home, ProjectDir: st.ProjectDir, CLIConfigs: o.Configs, Strict: o.Strict, Env: env, Plugins: st.Plugins})
	for _, p := range cfg.Problems {
		level := "error"
		if p.Warning {
			level = "warn"
		}
		notices = append(notices, event.Notice{Level: level, Text: "MCP: " + p.Error()})
	}
	for name := range o.InProcess {
		cfg.Servers = append(cfg.Servers, mcphost.ServerConfig{Name: name, Type: mcphost.TypeSDK, Scope: mcphost.ScopeCLI})
	}
	for name := range o.Transports {
		if o.InProcess[name] == nil {
			cfg.Servers = append(cfg.Servers, mcphost.ServerConfig{Name: name, Type: mcphost.TypeSDK, Scope: mcphost.ScopeCLI})
		}
	}
	if len(cfg.Servers) == 0 && !o.Dynamic {
		return nil, notices
	}
	trusted := trust.Decide(st.Home, st.ProjectDir, st.Trust)
	logger := st.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m := mcphost.New(mcphost.Options{
		Servers: mcphost.PolicyFrom(st.Settings, trusted).Apply(cfg.Servers), InProcess: o.InProcess, Transports: o.Transports,
		Environ: environ, Traceparent: st.Traceparent, Dir: st.Cwd, Roots: append([]string{st.Cwd}, st.AddDirs...),
		ConnectTimeout: o.ConnectTimeout, ToolTimeout: o.ToolTimeout, MaxOutputTokens: o.MaxOutputTokens,
		ToolSearch: mcphost.ToolSearchOptions{Mode: o.ToolSearch, ContextWindow: int(st.ContextWindow)},
		OAuth:      mcphost.OAuthOptions{Home: st.Home, Authorize: o.Authorize, ClientName: "keel", ClientSecret: o.ClientSecret},
		ClientName: "keel", ClientVersion: st.Version, Logger: logger.With("component", "mcp"),
		Elicit: st.Elicit, Confine: st.Confine,
	})
	m.Start(ctx)
	return m, notices
}

// mcpStatus is the servers' status for the init event.
func (s *Session) mcpStatus() []event.MCPServerStatus {
	if s.mcp == nil {
		return nil
	}
	var out []event.MCPServerStatus
	for _, st := range s.servers.Status() {
		status := event.MCPServerStatus{Name: st.Name, Status: string(st.Status), Reason: st.Reason, Tools: st.Tools}
		if st.Scope == mcphost.ScopePlugin {
			status.Source = string(st.Scope) // the other sources are not named yet
		}
		out = append(out, status)
	}
	return out
}

// MCP is a session's MCP servers as a UI or a controlling program drives them: their status,
// sign-ins, reconnects, switching one off and on, and the set the driving program manages
// ([MCP.SetServers]). [Session.MCP] returns it; it is safe for concurrent use, and works
// (reporting that nothing is configured) for a session without MCP servers.
type MCP struct {
	// m is nil when the session has no MCP manager.
	m    *mcphost.Manager
	opts MCPOptions
	// policy is the session's MCP policy (its settings' allow and deny lists, trust) for
	// servers added while it runs.
	policy  func() mcphost.Policy
	logger  *slog.Logger
	dynamic dynamicMCP
}

// MCP returns the session's MCP servers.
func (s *Session) MCP() *MCP { return s.servers }

// newMCP wraps the session's manager (nil without one).
func (s *Session) newMCP() *MCP {
	return &MCP{m: s.mcp, opts: s.opts.MCP, logger: s.logger,
		policy: func() mcphost.Policy { return mcphost.PolicyFrom(s.settings, s.conf.trusted()) }}
}

// Status reports every configured MCP server.
func (c *MCP) Status() []mcphost.ServerStatus {
	if c.m == nil {
		return nil
	}
	return c.m.Status()
}

// Login signs the user in to the HTTP server called name anew (OAuth), through
// MCPOptions.Authorize, and reconnects it with the new tokens.
func (c *MCP) Login(ctx context.Context, name string) error {
	if c.m == nil {
		return fmt.Errorf("no MCP server %q is configured", name)
	}
	a := c.opts.Authorize
	if a == nil {
		return fmt.Errorf("login %s: this session cannot open an authorization page; run `keel mcp login %s`", name, name)
	}
	return c.m.Login(ctx, name, func(ctx context.Context, authURL string) error { return a(ctx, name, authURL) })
}

// Reconnect restarts one MCP server.
func (c *MCP) Reconnect(ctx context.Context, name string) error {
	if c.m == nil {
		return fmt.Errorf("no MCP server %q is configured", name)
	}
	return c.m.Reconnect(ctx, name)
}

// Toggle switches an MCP server off or on for the following requests (mcp_toggle): off, its
// process is stopped (before Toggle returns), its tools are no longer offered and its status
// reads disabled; on, it starts again and Toggle waits for it to connect. A server that is on
// but failed is reconnected.
func (c *MCP) Toggle(ctx context.Context, name string, enabled bool) error {
	if c.m == nil {
		return fmt.Errorf("no MCP server named %q", name)
	}
	if _, ok := c.m.Config(name); !ok {
		return fmt.Errorf("no MCP server named %q", name)
	}
	if enabled {
		return c.m.Enable(ctx, name)
	}
	return c.m.Disable(ctx, name)
}

// lookupTool finds a tool the pool no longer offers — an MCP tool of a server that failed —
// so the call gets the server's own clear error instead of "no such tool".
func (s *Session) lookupTool(name string) (tool.Tool, bool) {
	if s.mcp == nil || !tool.IsMCP(name) {
		return nil, false
	}
	return s.mcp.Lookup(name)
}

// mcpPrompts lets skills offer MCP prompts as /mcp__server__prompt commands.
type mcpPrompts struct{ s *Session }

var _ skill.PromptSource = mcpPrompts{}

func (p mcpPrompts) Prompts() []skill.PromptInfo {
	if p.s.mcp == nil {
		return nil
	}
	var out []skill.PromptInfo
	for _, pr := range p.s.mcp.Prompts() {
		info := skill.PromptInfo{Server: pr.Server, Name: pr.Name, Description: pr.Description}
		for _, a := range pr.Arguments {
			info.Arguments = append(info.Arguments, skill.PromptArgument{Name: a.Name, Description: a.Description, Required: a.Required})
		}
		out = append(out, info)
	}
	return out
}

func (p mcpPrompts) GetPrompt(ctx context.Context, server, name string, args map[string]string) (string, error) {
	if p.s.mcp == nil {
		return "", fmt.Errorf("no MCP servers")
	}
	msgs, err := p.s.mcp.GetPrompt(ctx, server, name, args)
	if err != nil {
		return "", err
	}
	var parts []string
	for _, m := range msgs {
		parts = append(parts, m.TextOf())
	}
	return strings.Join(parts, "\n\n"), nil
}

// promptToolAsker answers permission questions by calling an MCP tool, Claude Code's
// --permission-prompt-tool contract: input {tool_name, input, tool_use_id}, result text a JSON
// object {"behavior":"allow"|"deny","message":…}.
type promptToolAsker struct {
	s    *Session
	name string
}

func (a promptToolAsker) Ask(ctx context.Context, r permission.AskRequest) (permission.Answer, error) {
	t, ok := a.s.lookupTool(a.name)
	if !ok {
		return permission.DenyAnswer("the permission prompt tool " + a.name + " is not available"), nil
	}
	input := r.Request.Input
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	args, _ := json.Marshal(map[string]any{"tool_name": r.Request.Tool, "input": input, "tool_use_id": r.Request.ToolUseID})
	res := t.Call(ctx, &tool.Env{State: tool.State{Cwd: a.s.Cwd()}, SessionID: a.s.id, Files: a.s.files,
		Progress: func(string) {}, Logger: a.s.logger}, args)
	if res.IsError {
		return permission.DenyAnswer("the permission prompt tool failed: " + res.ResultText()), nil
	}
	var out struct {
		Behavior string `json:"behavior"`
		Message  string `json:"message"`
	}
	if err := json.Unmarshal([]byte(message.Message{Content: res.Content}.TextOf()), &out); err != nil {
		return permission.DenyAnswer("the permission prompt tool answered something that is not {\"behavior\":…}"), nil
	}
	if out.Behavior == "allow" {
		return permission.AllowOnce(), nil
	}
	if out.Message == "" {
		out.Message = "denied by " + a.name
	}
	return permission.DenyAnswer(out.Message), nil
}

// childMCP starts the MCP servers an agent definition configures inline, for that agent's
// lifetime: they join only its pool, and stop when it ends.
type childMCP struct{ s *Session }

var _ subagent.MCPStarter = childMCP{}

func (c childMCP) StartServers(ctx context.Context, def *agentdef.Definition, servers []agentdef.MCPServer) (subagent.ChildMCP, error) {
	if def.Source == agentdef.SourceProject && !c.s.conf.trusted() {
		return nil, fmt.Errorf("%s comes from the project, and this workspace is not trusted to run its MCP servers", def.Path)
	}
	entries := map[string]json.RawMessage{}
	for _, sv := range servers {
		entries[sv.Name] = sv.Config
	}
	doc, err := json.Marshal(map[string]any{"mcpServers": entries})
	if err != nil {
		return nil, err
	}
	environ, env := mcpEnviron(c.s.opts.MCP)
	cfg := mcphost.Load(mcphost.LoadOptions{CLIConfigs: []string{string(doc)}, Strict: true, Env: env})
	var problems []error
	for _, p := range cfg.Problems {
		if !p.Warning {
			problems = append(problems, p)
		}
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	cwd := c.s.Cwd()
	m := mcphost.New(mcphost.Options{
		Servers: mcphost.PolicyFrom(c.s.settings, c.s.conf.trusted()).Apply(cfg.Servers), InProcess: c.s.opts.MCP.InProcess,
		Environ: environ, Traceparent: c.s.tel.serverTraceparent, Dir: cwd, Roots: []string{cwd},
		ConnectTimeout: c.s.opts.MCP.ConnectTimeout, ToolTimeout: c.s.opts.MCP.ToolTimeout, MaxOutputTokens: c.s.opts.MCP.MaxOutputTokens,
		ToolSearch: mcphost.ToolSearchOptions{Mode: mcphost.SearchOff},
		ClientName: "keel", ClientVersion: c.s.opts.Version, Logger: c.s.logger.With("component", "mcp", "scope", "agent"),
		Confine: c.s.serverConfine(),
	})
	m.Start(ctx)
	return m, nil
}
