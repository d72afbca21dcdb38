// Package mcpserve is `keel mcp serve`: keel's built-in tools, its skills and custom commands
// (as prompts, with argument completion) and the workspace's files (as resources) offered to
// other agents over MCP, on stdio or streamable HTTP. Like the TUI it is a frontend: it
// drives keel's components and holds no agent logic. The calling agent's own permission
// system decides what runs; keel adds none here.
package mcpserve

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/tool"
)

// Options is what the server offers.
type Options struct {
	Name, Version string
	// Tools are served as MCP tools; each call runs with Env() as its environment.
	Tools []tool.Tool
	Env   func() *tool.Env
	// Prompts, if set, are served as MCP prompts (keel's skills and custom commands).
	Prompts PromptSource
	// Root, if set, is the workspace whose files are served as resources (file:// URIs).
	Root   string
	Logger *slog.Logger
}

// New builds the MCP server. Only what Options backs is declared: no prompts capability
// without Prompts, no resources without Root.
func New(opts Options) *mcp.Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	so := &mcp.ServerOptions{Logger: opts.Logger}
	if opts.Prompts != nil || opts.Root != "" {
		so.CompletionHandler = (&completer{prompts: opts.Prompts, root: opts.Root}).complete
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: opts.Name, Version: opts.Version}, so)
	for _, tl := range opts.Tools {
		addTool(srv, tl, opts.Env)
	}
	if opts.Prompts != nil {
		addPrompts(srv, opts.Prompts)
	}
	if opts.Root != "" {
		addResources(srv, opts.Root, opts.Logger)
	}
	return srv
}

func addTool(srv *mcp.Server, tl tool.Tool, env func() *tool.Env) {
	srv.AddTool(&mcp.Tool{Name: tl.Name(), Description: tl.Description(), InputSchema: tl.InputSchema(),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: tl.ReadOnly(json.RawMessage(`{}`))}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			e := env()
			e.Progress = progress(ctx, req)
			// ctx ends when the client sends notifications/cancelled: the tool stops.
			res := tl.Call(ctx, e, req.Params.Arguments)
			return &mcp.CallToolResult{IsError: res.IsError, Content: content(res.Content)}, nil
		})
}

// progress forwards the tool's progress notes as MCP progress notifications when the client
// asked for them (a progress token on the call).
func progress(ctx context.Context, req *mcp.CallToolRequest) func(string) {
	token := req.Params.GetProgressToken()
	if token == nil {
		return func(string) {}
	}
	n := 0.0
	return func(msg string) {
		n++
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: n, Message: msg})
	}
}

// content turns a tool result into MCP content blocks: text as text, images as image
// content with their data (base64, as the Messages API carries them).
func content(blocks []message.Block) []mcp.Content {
	var out []mcp.Content
	for _, b := range blocks {
		switch b.Type {
		case "text":
			out = append(out, &mcp.TextContent{Text: b.Text})
		case "image":
			if b.Source == nil {
				continue
			}
			data, err := base64.StdEncoding.DecodeString(b.Source.Data)
			if err != nil {
				out = append(out, &mcp.TextContent{Text: fmt.Sprintf("[image %s: undecodable data: %v]", b.Source.MediaType, err)})
				continue
			}
			out = append(out, &mcp.ImageContent{MIMEType: b.Source.MediaType, Data: data})
		default:
			if b.Text != "" {
				out = append(out, &mcp.TextContent{Text: b.Text})
			}
		}
	}
	if len(out) == 0 {
		out = []mcp.Content{&mcp.TextContent{Text: ""}}
	}
	return out
}
