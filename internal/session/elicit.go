package session

import (
	"context"
	"encoding/json"
	"fmt"

	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/mcphost"
)

// elicitation answers MCP servers' questions for the session, in Claude Code's order: the
// Elicitation hooks may answer; otherwise the frontend's asker (the TUI's form, the Agent
// SDK's elicitation control request) asks the user; with neither, the question is declined.
// The ElicitationResult hooks see, and may change, every answer before it goes back.
type elicitation struct {
	hooks *hooks.Runner
	// ask is the frontend's asker; nil when there is none.
	ask mcphost.ElicitFunc
	// input fills in what every hook input carries (the session, its transcript, its mode,
	// the working directory).
	input  func(hooks.Input) hooks.Input
	logger *slog.Logger
}

// newElicitation is s's elicitation.
func newElicitation(s *Session) elicitation {
	return elicitation{hooks: s.hooks, ask: s.opts.MCP.Elicit, logger: s.logger,
		input: func(in hooks.Input) hooks.Input { return s.hookd.Input(s.Cwd(), in) }}
}

// answerer returns the MCP host's ElicitFunc, or nil when no one could answer (no asker, no
// Elicitation hook), so the host does not advertise the capability at all.
func (e elicitation) answerer() mcphost.ElicitFunc {
	if e.ask == nil && !e.hooks.Has(hooks.Elicitation) {
		return nil
	}
	return func(ctx context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		in := e.elicitInput(server, p)
		res, err := e.elicitHooks(ctx, in)
		if err != nil {
			return nil, err
		}
		if res == nil && e.ask != nil {
			if res, err = e.ask(ctx, server, p); err != nil {
				return nil, fmt.Errorf("ask the user for %s: %w", server, err)
			}
		}
		if res == nil {
			res = &mcp.ElicitResult{Action: "decline"}
		}
		return e.elicitResultHooks(ctx, in, res), nil
	}
}

func (e elicitation) elicitInput(server string, p *mcp.ElicitParams) hooks.Input {
	in := hooks.Input{MCPServerName: server, Message: p.Message, Mode: p.Mode, URL: p.URL, ElicitationID: p.ElicitationID}
	if in.Mode == "" {
		in.Mode = "form"
	}
	if p.RequestedSchema != nil {
		in.RequestedSchema, _ = json.Marshal(p.RequestedSchema)
	}
	return e.input(in)
}

// elicitHooks runs the Elicitation hooks: nil means none answered.
func (e elicitation) elicitHooks(ctx context.Context, in hooks.Input) (*mcp.ElicitResult, error) {
	out := e.hooks.Run(ctx, hooks.Elicitation, in)
	e.logHookNotices(out)
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
func (e elicitation) elicitResultHooks(ctx context.Context, in hooks.Input, res *mcp.ElicitResult) *mcp.ElicitResult {
	if !e.hooks.Has(hooks.ElicitationResult) {
		return res
	}
	in.Action = res.Action
	if res.Content != nil {
		in.Content, _ = json.Marshal(res.Content)
	}
	out := e.hooks.Run(ctx, hooks.ElicitationResult, in)
	e.logHookNotices(out)
	if out.Decision == hooks.DecisionBlock {
		return &mcp.ElicitResult{Action: "decline"}
	}
	if out.Action == "" {
		return res
	}
	changed, err := hookAnswer(out)
	if err != nil {
		e.logger.Warn("ElicitationResult hook answer unusable; keeping the answer", "err", err)
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

func (e elicitation) logHookNotices(out hooks.Outcome) {
	for _, n := range out.Notices {
		e.logger.Info("hook notice", "event", out.Event, "notice", n)
	}
	for _, r := range out.Results {
		if r.Warning != "" {
			e.logger.Warn("hook warning", "event", out.Event, "command", r.Command, "warning", r.Warning)
		}
	}
}
