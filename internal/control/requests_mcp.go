package control

import (
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
	Name       string          `json:"name"`
	Status     string          `json:"status"`
	ServerInfo *mcpServerInfo  `json:"serverInfo,omitempty"`
	Error      string          `json:"error,omitempty"`
	Scope      string          `json:"scope,omitempty"`
	Tools      []mcpStatusTool `json:"tools,omitempty"`
}

type mcpServerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type mcpStatusTool struct {
	Name string `json:"name"`
}

func (c *controller) onMCPStatus(context.Context, json.RawMessage) (any, error) {
	out := []mcpServerStatus{}
	if m, ok := c.sess.(mcpSession); ok {
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
