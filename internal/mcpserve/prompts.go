package mcpserve

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Prompt is one skill or custom command offered as an MCP prompt.
type Prompt struct {
	Name, Description string
	// ArgumentHint describes the arguments (the skill's argument-hint); the prompt takes them
	// as one "arguments" string, as /name ARGS does.
	ArgumentHint string
}

// PromptSource lists prompts and renders one with its arguments. skill.Catalog adapted by
// the CLI is one.
type PromptSource interface {
	Prompts() []Prompt
	Render(ctx context.Context, name, args string) (string, error)
}

// argumentName is the one argument every served prompt takes.
const argumentName = "arguments"

func addPrompts(srv *mcp.Server, src PromptSource) {
	for _, p := range src.Prompts() {
		desc := p.Description
		if desc == "" {
			desc = "/" + p.Name
		}
		hint := p.ArgumentHint
		if hint == "" {
			hint = "what to put after /" + p.Name
		}
		name := p.Name
		srv.AddPrompt(&mcp.Prompt{Name: name, Description: desc, Arguments: []*mcp.PromptArgument{{Name: argumentName, Description: hint}}},
			func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				text, err := src.Render(ctx, name, req.Params.Arguments[argumentName])
				if err != nil {
					return nil, fmt.Errorf("prompt %s: %w", name, err)
				}
				return &mcp.GetPromptResult{Description: desc,
					Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}}}, nil
			})
	}
}
