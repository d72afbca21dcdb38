package session

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel/internal/agentdef"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/mcphost"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/trust"
)

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
		case st.Status == mcphost.StatusDisabled && (strings.Contains(st.Reason, "not trusted") || strings.Contains(st.Reason, "sandboxed commands can write")):
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
	Confine func(*exec.Cmd) (mcphost.Confined, error)
	// Writable are the roots sandboxed commands can write while stdio servers run outside
	// the sandbox ([mcphost.Policy]); none when the sandbox is off or confines them.
	Writable []string
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
	policy := mcphost.PolicyFrom(st.Settings, trusted)
	policy.Dir, policy.Repo, policy.Writable = st.Cwd, st.ProjectDir, st.Writable
	m := mcphost.New(mcphost.Options{
		Servers: policy.Apply(cfg.Servers), InProcess: o.InProcess, Transports: o.Transports,
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

// dynamicMCP is the set of MCP servers the driving program manages while the session runs
// (the Agent SDK's mcp_set_servers): its in-process servers from the start, and whatever
// SetServers named since.
type dynamicMCP struct {
	// mu serialises SetMCPServers and guards entries.
	mu sync.Mutex
	// entries holds each server's configuration as last set, in canonical JSON; nil until
	// the first SetMCPServers.
	entries map[string]string
}

// dynamicServer is one server SetServers may add.
type dynamicServer struct {
	cfg   mcphost.ServerConfig
	tr    mcp.Transport
	canon string
}

// agentServers reads the servers an agent definition configures inline, ${VAR} expanded
// from env.
func agentServers(servers []agentdef.MCPServer, env map[string]string) (*mcphost.Config, error) {
	entries := map[string]json.RawMessage{}
	for _, sv := range servers {
		entries[sv.Name] = sv.Config
	}
	doc, err := json.Marshal(map[string]any{"mcpServers": entries})
	if err != nil {
		return nil, fmt.Errorf("reading the agent's MCP servers: %w", err)
	}
	return mcphost.Load(mcphost.LoadOptions{CLIConfigs: []string{string(doc)}, Strict: true, Env: env}), nil
}
