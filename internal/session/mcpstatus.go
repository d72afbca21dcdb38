package session

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel/internal/mcphost"
)

// MCPToolInfo is one tool of an MCP server as a status report lists it: its name on the
// server, description and the server's hints.
type MCPToolInfo struct {
	Name        string
	Description string
	Annotations *mcp.ToolAnnotations
}

// annotated is an MCP tool that keeps the hints its server listed it with.
type annotated interface {
	Raw() (server, tool string)
	Annotations() *mcp.ToolAnnotations
}

// ServerTools lists the tools each connected server offers now, by server name, in the
// pool's order (the Agent SDK's mcpServerStatus tools).
func (c *MCP) ServerTools(ctx context.Context) map[string][]MCPToolInfo {
	out := map[string][]MCPToolInfo{}
	if c.m == nil {
		return out
	}
	for _, t := range c.m.Tools(ctx) {
		a, ok := t.(annotated)
		if !ok {
			continue
		}
		server, name := a.Raw()
		out[server] = append(out[server], MCPToolInfo{Name: name, Description: t.Description(), Annotations: a.Annotations()})
	}
	return out
}

// ServerConfig returns the configuration of the server called name.
func (c *MCP) ServerConfig(name string) (mcphost.ServerConfig, bool) {
	if c.m == nil {
		return mcphost.ServerConfig{}, false
	}
	return c.m.Config(name)
}
