package control

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel/internal/mcphost"
)

// The MCP requests: status, reconnect, toggle, replace.

// mcpSession is a session with MCP servers.
type mcpSession interface {
	MCPStatus() []mcphost.ServerStatus
	ReconnectMCP(ctx context.Context, name string) error
}

// mcpServerStatus is the SDK's McpServerStatus.
type mcpServerStatus struct {
	Name       string         `json:"name"`
	Status     string         `json:"status"`
	ServerInfo *mcpServerInfo `json:"serverInfo,omitempty"`
	Error      string         `json:"error,omitempty"`
	Scope      string         `json:"scope,omitempty"`
	// Source is where the definition came from: sdk, plugin or the configuration scope.
	Source string           `json:"source,omitempty"`
	Config *mcpStatusConfig `json:"config,omitempty"`
	Tools  []mcpStatusTool  `json:"tools,omitempty"`
}

type mcpServerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type mcpStatusTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Annotations *mcpAnnotations `json:"annotations,omitempty"`
}

// mcpAnnotations are the SDK's tool annotations: the server's hints under shorter names.
type mcpAnnotations struct {
	ReadOnly    bool  `json:"readOnly"`
	Destructive *bool `json:"destructive,omitempty"`
	OpenWorld   *bool `json:"openWorld,omitempty"`
}

// MCPTool is one tool of a connected server, for mcp_status.
type MCPTool struct {
	Name        string
	Description string
	Annotations *mcp.ToolAnnotations
}

// mcpDetailer is a session that reports its servers' tools and configurations.
type mcpDetailer interface {
	MCPServerTools(ctx context.Context) map[string][]MCPTool
	MCPServerConfig(name string) (mcphost.ServerConfig, bool)
}

// mcpStatusConfig is the SDK's McpServerStatusConfig: how the server is reached. Its
// environment and headers are left out: they may carry secrets.
type mcpStatusConfig struct {
	Type    string   `json:"type"`
	Command string   `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
	URL     string   `json:"url,omitempty"`
	Name    string   `json:"name,omitempty"`
}

// detail adds a server's tools, configuration and source.
func (s *mcpServerStatus) detail(d mcpDetailer, tools map[string][]MCPTool, st mcphost.ServerStatus) {
	s.Source = s.Scope
	if cfg, ok := d.MCPServerConfig(st.Name); ok {
		c := &mcpStatusConfig{Type: cmp.Or(cfg.Type, "stdio"), Command: cfg.Command, Args: cfg.Args, URL: cfg.URL}
		if c.Type == mcphost.TypeSDK {
			c.Name = st.Name
		}
		s.Config = c
	}
	for _, t := range tools[st.Name] {
		tool := mcpStatusTool{Name: t.Name, Description: t.Description}
		if a := t.Annotations; a != nil {
			tool.Annotations = &mcpAnnotations{ReadOnly: a.ReadOnlyHint, Destructive: a.DestructiveHint, OpenWorld: a.OpenWorldHint}
		}
		s.Tools = append(s.Tools, tool)
	}
}

func (c *controller) onMCPStatus(ctx context.Context, _ json.RawMessage) (any, error) {
	out := []mcpServerStatus{}
	if m, ok := c.sess.(mcpSession); ok {
		d, detailed := c.sess.(mcpDetailer)
		var tools map[string][]MCPTool
		if detailed {
			tools = d.MCPServerTools(ctx)
		}
		for _, st := range m.MCPStatus() {
			s := mcpServerStatus{Name: st.Name, Status: string(st.Status), Error: st.Reason, Scope: string(st.Scope)}
			if name, version, ok := strings.Cut(st.Server, " "); ok {
				s.ServerInfo = &mcpServerInfo{Name: name, Version: version}
			} else if st.Server != "" {
				s.ServerInfo = &mcpServerInfo{Name: st.Server}
			}
			if st.Type == mcphost.TypeSDK && (st.Scope == mcphost.ScopeCLI || st.Scope == mcphost.ScopeDynamic) {
				s.Scope = "sdk"
			}
			if detailed {
				s.detail(d, tools, st)
			}
			out = append(out, s)
		}
	}
	return map[string]any{"mcpServers": out}, nil
}

func (c *controller) onMCPReconnect(ctx context.Context, raw json.RawMessage) (any, error) {
	var req struct {
		ServerName string `json:"serverName"`
	}
	if err := json.Unmarshal(raw, &req); err != nil || req.ServerName == "" {
		return nil, errors.New("mcp_reconnect: want {\"serverName\": …}")
	}
	m, ok := c.sess.(mcpSession)
	if !ok {
		return nil, fmt.Errorf("mcp_reconnect: no MCP server named %q", req.ServerName)
	}
	if err := m.ReconnectMCP(ctx, req.ServerName); err != nil {
		return nil, err
	}
	return map[string]any{}, nil
}

// mcpToggler is a session whose MCP servers can be switched off and on, and replaced.
type mcpToggler interface {
	ToggleMCP(ctx context.Context, name string, enabled bool) error
}

// mcpReplacer is a session whose MCP servers the SDK can replace at runtime
// (mcp_set_servers); transports reach the SDK's in-process servers among servers.
type mcpReplacer interface {
	SetMCPServers(ctx context.Context, servers map[string]json.RawMessage, transports map[string]mcp.Transport) (added, removed []string, errs map[string]string, err error)
}

func (c *controller) onMCPToggle(ctx context.Context, raw json.RawMessage) (any, error) {
	var req struct {
		ServerName string `json:"serverName"`
		Enabled    *bool  `json:"enabled"`
	}
	if err := json.Unmarshal(raw, &req); err != nil || req.ServerName == "" || req.Enabled == nil {
		return nil, errors.New("mcp_toggle: want {\"serverName\": …, \"enabled\": true|false}")
	}
	t, ok := c.sess.(mcpToggler)
	if !ok {
		return nil, errors.New("mcp_toggle: this session cannot switch MCP servers")
	}
	if err := t.ToggleMCP(ctx, req.ServerName, *req.Enabled); err != nil {
		return nil, err
	}
	return map[string]any{}, nil
}

// onMCPSetServers replaces the servers the SDK manages: its in-process servers (entries
// {"type":"sdk"}, reached over mcp_message like those of initialize) and process servers,
// and answers with what was added, removed, and the errors by server (McpSetServersResult).
func (c *controller) onMCPSetServers(ctx context.Context, raw json.RawMessage) (any, error) {
	var req struct {
		Servers map[string]json.RawMessage `json:"servers"`
	}
	if err := json.Unmarshal(raw, &req); err != nil || req.Servers == nil {
		return nil, errors.New("mcp_set_servers: want {\"servers\": {name: config, …}}")
	}
	r, ok := c.sess.(mcpReplacer)
	if !ok {
		return nil, errors.New("mcp_set_servers: this session cannot change its MCP servers")
	}
	var sdkNames []string
	for name, entry := range req.Servers {
		var head struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(entry, &head) == nil && head.Type == mcphost.TypeSDK {
			sdkNames = append(sdkNames, name)
		}
	}
	added, removed, errs, err := r.SetMCPServers(ctx, req.Servers, c.sdkTransports(sdkNames))
	if err != nil {
		return nil, err
	}
	c.forgetSDKServers(removed)
	if errs == nil {
		errs = map[string]string{}
	}
	return map[string]any{"added": nonNil(added), "removed": nonNil(removed), "errors": errs}, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
