package acp

import (
	"context"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/keel-dev/keel"
)

// The permission options keel offers, as Claude Code does.
const (
	optAllowOnce    = "allow_once"
	optAllowAlways  = "allow_always"
	optRejectOnce   = "reject_once"
	optRejectAlways = "reject_always"
)

// ask puts a permission question to the editor: the tool call it is about (announced first,
// so the editor can show it in place), keel's reason, and allow or reject, once or always.
// A teammate's or subagent's question carries its name. A cancelled turn, or a client that
// answers "cancelled", denies the call.
func (s *session) ask(ctx context.Context, req keel.PermissionRequest) keel.PermissionAnswer {
	id := req.ToolUseID
	if id == "" {
		id = "permission-" + req.Tool
	}
	s.calls.announce(ctx, id, req.Tool, req.Agent, req.Input)
	d := s.describe(ctx, req.Tool, req.Agent, req.Input)
	always := "Always allow"
	if len(req.Suggestions) > 0 {
		always += " " + strings.Join(req.Suggestions, ", ")
	}
	content := append([]sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(req.Reason))}, d.content...)
	resp, err := s.a.conn.RequestPermission(ctx, sdk.RequestPermissionRequest{
		SessionId: sdk.SessionId(s.id),
		ToolCall: sdk.ToolCallUpdate{
			ToolCallId: sdk.ToolCallId(id), Title: sdk.Ptr(d.title), Kind: sdk.Ptr(d.kind),
			Status: sdk.Ptr(sdk.ToolCallStatusPending), Locations: d.locations, Content: content, RawInput: rawInput(req.Input),
		},
		Options: []sdk.PermissionOption{
			{OptionId: optAllowOnce, Name: "Allow", Kind: sdk.PermissionOptionKindAllowOnce},
			{OptionId: optAllowAlways, Name: always, Kind: sdk.PermissionOptionKindAllowAlways},
			{OptionId: optRejectOnce, Name: "Reject", Kind: sdk.PermissionOptionKindRejectOnce},
			{OptionId: optRejectAlways, Name: "Always reject", Kind: sdk.PermissionOptionKindRejectAlways},
		},
	})
	if err != nil {
		return keel.PermissionAnswer{Reason: "the permission question was not answered: " + err.Error()}
	}
	if resp.Outcome.Selected == nil {
		return keel.PermissionAnswer{Reason: "the user cancelled the permission question"}
	}
	switch resp.Outcome.Selected.OptionId {
	case optAllowOnce:
		return keel.PermissionAnswer{Allow: true}
	case optAllowAlways:
		return keel.PermissionAnswer{Allow: true, Always: true}
	case optRejectAlways:
		return keel.PermissionAnswer{Always: true, Reason: "the user rejected this call, and calls like it"}
	}
	return keel.PermissionAnswer{Reason: "the user rejected this call"}
}
