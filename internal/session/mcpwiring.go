package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/keel-dev/keel/internal/agentdef"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/mcphost"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/skill"
	"github.com/keel-dev/keel/internal/subagent"
	"github.com/keel-dev/keel/internal/tool"
)

// MCP returns the session's MCP servers.
func (s *Session) MCP() *MCP { return s.servers }

// lookupTool finds a tool the pool no longer offers — an MCP tool of a server that failed —
// so the call gets the server's own clear error instead of "no such tool".
func (s *Session) lookupTool(name string) (tool.Tool, bool) {
	if s.mcp == nil || !tool.IsMCP(name) {
		return nil, false
	}
	return s.mcp.Lookup(name)
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

// newMCP wraps the session's manager (nil without one).
func (s *Session) newMCP() *MCP {
	return &MCP{m: s.mcp, opts: s.opts.MCP, logger: s.logger,
		policy: func() mcphost.Policy { return s.mcpPolicy(s.opts.Cwd) }}
}

// mcpPolicy is the session's MCP policy for servers started in dir.
func (s *Session) mcpPolicy(dir string) mcphost.Policy {
	p := mcphost.PolicyFrom(s.settings, s.conf.trusted())
	p.Dir, p.Repo, p.Writable = dir, s.projectDir, s.serverExposed()
	return p
}

// serverExposed are the roots sandboxed commands can write while MCP servers run outside the
// sandbox: none when there is no sandbox, or when it confines the servers too.
func (s *Session) serverExposed() []string {
	if s.sandbox == nil || s.serverConfine() != nil {
		return nil
	}
	return s.sandbox.Policy().Writable
}

// startMCP connects the session's MCP servers.
func (s *Session) startMCP(ctx context.Context) {
	window := s.switches.ContextWindow()
	m, notices := OpenMCP(ctx, s.opts.MCP, MCPSetup{
		Home: s.opts.Home, ProjectDir: s.projectDir, Cwd: s.opts.Cwd, AddDirs: s.state.AdditionalDirs,
		Settings: s.settings, Trust: s.opts.Trust, Version: s.opts.Version, ContextWindow: window, Logger: s.logger,
		Elicit: newElicitation(s).answerer(), Plugins: s.plug.Current().MCPServers(), Traceparent: s.tel.serverTraceparent,
		Confine: s.serverConfine(), Writable: s.serverExposed(),
	})
	s.mcp = m
	s.notices = append(s.notices, notices...)
	if m != nil {
		s.notices = append(s.notices, mcpStartNotices(m.Status())...)
	}
}

// childMCP starts the MCP servers an agent definition configures inline, for that agent's
// lifetime: they join only its pool, and stop when it ends.
type childMCP struct{ s *Session }

var _ subagent.MCPStarter = childMCP{}

func (c childMCP) StartServers(ctx context.Context, def *agentdef.Definition, servers []agentdef.MCPServer) (subagent.ChildMCP, error) {
	if def.Source == agentdef.SourceProject && !c.s.conf.trusted() {
		return nil, fmt.Errorf("%s comes from the project, and this workspace is not trusted to run its MCP servers", def.Path)
	}
	environ, env := mcpEnviron(c.s.opts.MCP)
	cfg, err := agentServers(servers, env)
	if err != nil {
		return nil, err
	}
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
		Servers: c.s.mcpPolicy(cwd).Apply(cfg.Servers), InProcess: c.s.opts.MCP.InProcess,
		Environ: environ, Traceparent: c.s.tel.serverTraceparent, Dir: cwd, Roots: []string{cwd},
		ConnectTimeout: c.s.opts.MCP.ConnectTimeout, ToolTimeout: c.s.opts.MCP.ToolTimeout, MaxOutputTokens: c.s.opts.MCP.MaxOutputTokens,
		ToolSearch: mcphost.ToolSearchOptions{Mode: mcphost.SearchOff},
		ClientName: "keel", ClientVersion: c.s.opts.Version, Logger: c.s.logger.With("component", "mcp", "scope", "agent"),
		Confine: c.s.serverConfine(),
	})
	m.Start(ctx)
	return m, nil
}

// mcpPrompts lets skills offer MCP prompts as /mcp__server__prompt commands.
type mcpPrompts struct{ s *Session }

var _ skill.PromptSource = mcpPrompts{}

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
