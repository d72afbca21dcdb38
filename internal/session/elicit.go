package session

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/mcphost"
)

// elicitor answers MCP servers' questions for the session, in Claude Code's order: the
// Elicitation hooks may answer; otherwise the frontend's asker (the TUI's form, the Agent
// SDK's elicitation control request) asks the user; with neither, the question is declined.
// The ElicitationResult hooks see, and may change, every answer before it goes back.
//
// It returns nil when no one could answer (no asker, no Elicitation hook), so the MCP host
// does not advertise the capability at all.
func (s *Session) elicitor() mcphost.ElicitFunc {
	ask := s.opts.MCP.Elicit
	if ask == nil && !s.hooks.Has(hooks.Elicitation) {
		return nil
	}
	return func(ctx context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		in := s.elicitInput(server, p)
		res, err := s.elicitHooks(ctx, in)
		if err != nil {
			return nil, err
		}
		if res == nil && ask != nil {
			if res, err = ask(ctx, server, p); err != nil {
				return nil, fmt.Errorf("ask the user for %s: %w", server, err)
			}
		}
		if res == nil {
			res = &mcp.ElicitResult{Action: "decline"}
		}
		return s.elicitResultHooks(ctx, in, res), nil
	}
}

func (s *Session) elicitInput(server string, p *mcp.ElicitParams) hooks.Input {
	in := hooks.Input{MCPServerName: server, Message: p.Message, Mode: p.Mode, URL: p.URL, ElicitationID: p.ElicitationID}
	if in.Mode == "" {
		in.Mode = "form"
	}
	if p.RequestedSchema != nil {
		in.RequestedSchema, _ = json.Marshal(p.RequestedSchema)
	}
	return s.hookInput(s.Cwd(), in)
}

// elicitHooks runs the Elicitation hooks: nil means none answered.
func (s *Session) elicitHooks(ctx context.Context, in hooks.Input) (*mcp.ElicitResult, error) {
	out := s.hooks.Run(ctx, hooks.Elicitation, in)
	s.logHookNotices(out)
	if out.Decision == hooks.DecisionBlock {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	if out.Action == "" {
		return nil, nil
	}
	return hookAnswer(out)
}

// elicitResultHooks lets the ElicitationResult hooks see and replace the answer; a block
// turns it into a decline.
func (s *Session) elicitResultHooks(ctx context.Context, in hooks.Input, res *mcp.ElicitResult) *mcp.ElicitResult {
	if !s.hooks.Has(hooks.ElicitationResult) {
		return res
	}
	in.Action = res.Action
	if res.Content != nil {
		in.Content, _ = json.Marshal(res.Content)
	}
	out := s.hooks.Run(ctx, hooks.ElicitationResult, in)
	s.logHookNotices(out)
	if out.Decision == hooks.DecisionBlock {
		return &mcp.ElicitResult{Action: "decline"}
	}
	if out.Action == "" {
		return res
	}
	changed, err := hookAnswer(out)
	if err != nil {
		s.logger.Warn("ElicitationResult hook answer unusable; keeping the answer", "err", err)
		return res
	}
	return changed
}

func hookAnswer(out hooks.Outcome) (*mcp.ElicitResult, error) {
	res := &mcp.ElicitResult{Action: out.Action}
	if len(out.Content) > 0 && string(out.Content) != "null" {
		var content map[string]any
		if err := json.Unmarshal(out.Content, &content); err != nil {
			return nil, fmt.Errorf("%s hook content is not a JSON object: %w", out.Event, err)
		}
		res.Content = content
	}
	return res, nil
}

func (s *Session) logHookNotices(out hooks.Outcome) {
	for _, n := range out.Notices {
		s.logger.Info("hook notice", "event", out.Event, "notice", n)
	}
	for _, r := range out.Results {
		if r.Warning != "" {
			s.logger.Warn("hook warning", "event", out.Event, "command", r.Command, "warning", r.Warning)
		}
	}
}
