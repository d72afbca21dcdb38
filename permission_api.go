package keel

import (
	"context"
	"encoding/json"

	"github.com/keel-dev/keel/internal/permission"
)

// PermissionRequest is a question the agent asks before a tool call the rules leave open.
type PermissionRequest struct {
	// Tool is the tool's name ("Bash", "Edit", "mcp__server__tool").
	Tool string
	// Command, Paths and URL describe the call, as far as the tool says.
	Command string
	Paths   []string
	URL     string
	// Description is what the model says the call is for (the Bash tool's description).
	Description string
	// Reason says why approval is needed.
	Reason string
	// Suggestions are rules that, allowed always, would let this call through.
	Suggestions []string
	// Agent, AgentColor and AgentID name the agent asking (a subagent or teammate; empty for
	// the main agent).
	Agent      string
	AgentColor string
	AgentID    string
	// ToolUseID is the tool call being decided (the id of its tool_use block, as in the
	// [AssistantMessage] that made it and the [ToolStart] that follows), and Input its input.
	ToolUseID string
	Input     json.RawMessage
}

// PermissionAnswer answers a PermissionRequest.
type PermissionAnswer struct {
	// Allow lets the call run; Always also allows the suggested rules for the rest of the
	// session (the caller persists them if it wants to). Always without Allow denies them
	// for the rest of the session instead.
	Allow, Always bool
	// Reason goes back to the model when the call is denied.
	Reason string
}

// askerFunc adapts Options.Ask to the permission engine.
type askerFunc func(ctx context.Context, req PermissionRequest) PermissionAnswer

func (f askerFunc) Ask(ctx context.Context, r permission.AskRequest) (permission.Answer, error) {
	req := PermissionRequest{Tool: r.Request.Tool, Command: r.Request.Command, Paths: r.Request.Paths, URL: r.Request.URL,
		Description: inputDescription(r.Request.Input), Reason: r.Reason, Agent: r.Agent.Name, AgentColor: r.Agent.Color, AgentID: r.Agent.ID,
		ToolUseID: r.Request.ToolUseID, Input: r.Request.Input}
	for _, s := range r.Suggestions {
		req.Suggestions = append(req.Suggestions, s.String())
	}
	a := f(ctx, req)
	switch {
	case a.Allow && a.Always:
		return permission.AllowAlways(r.Suggestions...), nil
	case a.Allow:
		return permission.AllowOnce(), nil
	case a.Always:
		return permission.DenyAlways(a.Reason, r.Suggestions...), nil
	}
	return permission.DenyAnswer(a.Reason), nil
}

// inputDescription is the description field of a tool call's input, if it has one.
func inputDescription(raw json.RawMessage) string {
	var in struct {
		Description string `json:"description"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &in) != nil {
		return ""
	}
	return in.Description
}
