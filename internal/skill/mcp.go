package skill

import (
	"context"
	"fmt"
	"strings"
)

// mcpPrompts lists the MCP prompts as user-only entries. They are never in the model's
// listing: servers come and go between turns, and the listing is memoized.
func (c *Catalog) mcpPrompts() []Skill {
	if c.opts.Prompts == nil {
		return nil
	}
	var out []Skill
	for _, p := range c.opts.Prompts.Prompts() {
		var hint []string
		for _, a := range p.Arguments {
			if a.Required {
				hint = append(hint, "<"+a.Name+">")
			} else {
				hint = append(hint, "["+a.Name+"]")
			}
		}
		out = append(out, Skill{
			Name:                   mcpName(p.Server, p.Name),
			Description:            p.Description,
			Kind:                   KindMCPPrompt,
			Source:                 SourceMCP,
			Path:                   "mcp:" + p.Server + "/" + p.Name,
			Context:                ContextInline,
			ArgumentHint:           strings.Join(hint, " "),
			DisableModelInvocation: true,
			UserInvocable:          true,
			hasDescription:         p.Description != "",
			prompt:                 &p,
		})
	}
	return out
}

// getPrompt maps args onto the prompt's declared arguments in order (the last one takes the
// remaining words) and asks the server for the text.
func (c *Catalog) getPrompt(ctx context.Context, s Skill, args string) (string, error) {
	p := s.prompt
	words := splitArgs(args)
	values := map[string]string{}
	for i, a := range p.Arguments {
		switch {
		case i >= len(words):
		case i == len(p.Arguments)-1:
			values[a.Name] = strings.Join(words[i:], " ")
		default:
			values[a.Name] = words[i]
		}
	}
	var missing []string
	for _, a := range p.Arguments {
		if a.Required && values[a.Name] == "" {
			missing = append(missing, a.Name)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("/%s needs %s (usage: /%s %s)", s.Name, strings.Join(missing, ", "), s.Name, s.ArgumentHint)
	}
	text, err := c.opts.Prompts.GetPrompt(ctx, p.Server, p.Name, values)
	if err != nil {
		return "", fmt.Errorf("get MCP prompt %s from %s: %w", p.Name, p.Server, err)
	}
	return text, nil
}
