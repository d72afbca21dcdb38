package mcphost

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Names of the resource tools, as Claude Code calls them.
const (
	ListResourcesName = "ListMcpResourcesTool"
	ReadResourceName  = "ReadMcpResourceTool"
)

type listResIn struct {
	Server string `json:"server,omitempty"`
}

type readResIn struct {
	Server string `json:"server"`
	URI    string `json:"uri"`
}

// ResourceTools returns the tools that list and read MCP resources.
func (m *Manager) ResourceTools() []tool.Tool {
	return []tool.Tool{
		tool.New(tool.Spec[listResIn]{
			Name:              ListResourcesName,
			Description:       "List the resources MCP servers offer (optionally of one server).",
			Schema:            json.RawMessage(`{"type":"object","properties":{"server":{"type":"string","description":"Only this server's resources."}},"additionalProperties":false}`),
			IsReadOnly:        tool.Always[listResIn],
			IsConcurrencySafe: tool.Always[listResIn],
			Deferred:          true,
			Run: func(ctx context.Context, _ *tool.Env, in listResIn) tool.Result {
				return m.listResources(ctx, in.Server)
			},
		}),
		tool.New(tool.Spec[readResIn]{
			Name:              ReadResourceName,
			Description:       "Read an MCP resource by server name and URI.",
			Schema:            json.RawMessage(`{"type":"object","properties":{"server":{"type":"string","description":"The server name."},"uri":{"type":"string","description":"The resource URI."}},"required":["server","uri"],"additionalProperties":false}`),
			IsReadOnly:        tool.Always[readResIn],
			IsConcurrencySafe: tool.Always[readResIn],
			Deferred:          true,
			Run: func(ctx context.Context, _ *tool.Env, in readResIn) tool.Result {
				return m.readResource(ctx, in.Server, in.URI)
			},
		}),
	}
}

type resourceEntry struct {
	Server      string `json:"server"`
	URI         string `json:"uri"`
	Name        string `json:"name,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
	Description string `json:"description,omitempty"`
}

func (m *Manager) listResources(ctx context.Context, server string) tool.Result {
	m.awaitRelists(ctx)
	m.mu.Lock()
	var out []resourceEntry
	found := server == ""
	for _, c := range m.conns {
		if server != "" && c.cfg.Name != server {
			continue
		}
		found = true
		if !c.live() {
			continue
		}
		for _, r := range c.resources {
			out = append(out, resourceEntry{Server: c.cfg.Name, URI: r.URI, Name: r.Name, MIMEType: r.MIMEType, Description: r.Description})
		}
	}
	m.mu.Unlock()
	if !found {
		return tool.Errorf("no MCP server called %q", server)
	}
	if len(out) == 0 {
		return tool.Text("No resources found.")
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	return tool.Text(string(b))
}

// session returns the connected session of server, or why there is none.
func (m *Manager) session(server string) (*mcp.ClientSession, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.conns {
		if c.cfg.Name == server {
			if c.off {
				return nil, fmt.Errorf("MCP server %q is switched off for this session", server)
			}
			if c.session == nil || c.status != StatusConnected {
				return nil, fmt.Errorf("MCP server %q is %s: %s", server, c.status, c.reason)
			}
			return c.session, nil
		}
	}
	return nil, fmt.Errorf("no MCP server called %q", server)
}

func (m *Manager) readResource(ctx context.Context, server, uri string) tool.Result {
	sess, err := m.session(server)
	if err != nil {
		return tool.Errorf("%v", err)
	}
	res, err := sess.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return tool.Errorf("read %s from %s: %v", uri, server, err)
	}
	var blocks []message.Block
	for _, c := range res.Contents {
		blocks = append(blocks, resourceBlocks(c)...)
	}
	return tool.Result{Content: capBlocks(blocks, m.opts.MaxOutputTokens*4)}
}

// Prompt is one MCP prompt, for slash commands /mcp__server__prompt.
type Prompt struct {
	Server      string
	Name        string // raw prompt name
	Command     string // mcp__server__prompt, normalised
	Description string
	Arguments   []*mcp.PromptArgument
}

// Prompts lists the prompts of the connected servers.
func (m *Manager) Prompts() []Prompt {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Prompt
	for _, c := range m.conns {
		if !c.live() {
			continue
		}
		for _, p := range c.prompts {
			out = append(out, Prompt{Server: c.cfg.Name, Name: p.Name, Command: QualifiedName(c.cfg.Name, p.Name), Description: p.Description, Arguments: p.Arguments})
		}
	}
	return out
}

// GetPrompt expands a server's prompt into messages.
func (m *Manager) GetPrompt(ctx context.Context, server, name string, args map[string]string) ([]message.Message, error) {
	sess, err := m.session(server)
	if err != nil {
		return nil, err
	}
	res, err := sess.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("get prompt %s from %s: %w", name, server, err)
	}
	var out []message.Message
	for _, pm := range res.Messages {
		role := message.RoleUser
		if pm.Role == "assistant" {
			role = message.RoleAssistant
		}
		out = append(out, message.Message{Role: role, Content: contentBlocks(pm.Content)})
	}
	return out, nil
}
