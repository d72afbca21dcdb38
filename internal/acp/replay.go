package acp

import (
	"context"
	"encoding/json"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/keel-dev/keel"
)

// replay sends the conversation the session continues — from its transcript, after the last
// compaction — as the updates it produced: the user's prompts, the agent's text and thoughts,
// its tool calls with their results.
func (s *session) replay(ctx context.Context) {
	for _, e := range s.ks.History() {
		var m keel.Message
		switch e := e.(type) {
		case keel.UserMessage:
			m = e.Message
		case keel.AssistantMessage:
			m = e.Message
		default:
			continue
		}
		for _, b := range m.Content {
			if u, ok := s.replayBlock(ctx, m.Role, b); ok {
				s.update(ctx, u)
			}
		}
	}
}

func (s *session) replayBlock(ctx context.Context, role keel.Role, b keel.Block) (sdk.SessionUpdate, bool) {
	switch b.Type {
	case keel.BlockText:
		if strings.TrimSpace(b.Text) == "" {
			return sdk.SessionUpdate{}, false
		}
		if role == keel.RoleAssistant {
			return sdk.UpdateAgentMessageText(b.Text), true
		}
		if strings.HasPrefix(strings.TrimSpace(b.Text), "<system-reminder>") {
			return sdk.SessionUpdate{}, false // keel's notes to the model, not the user's words
		}
		return sdk.UpdateUserMessageText(b.Text), true
	case keel.BlockThinking:
		if b.Thinking == "" {
			return sdk.SessionUpdate{}, false
		}
		return sdk.UpdateAgentThoughtText(b.Thinking), true
	case keel.BlockImage:
		if b.Source == nil || b.Source.Data == "" || role != keel.RoleUser {
			return sdk.SessionUpdate{}, false
		}
		return sdk.UpdateUserMessage(sdk.ImageBlock(b.Source.Data, b.Source.MediaType)), true
	case keel.BlockToolUse:
		d := s.describe(ctx, b.Name, "", b.Input)
		if b.Name == "Write" {
			// The file holds what the call wrote, not what it replaced.
			var in callInput
			_ = json.Unmarshal(b.Input, &in)
			d.content = []sdk.ToolCallContent{sdk.ToolDiffContent(d.locations[0].Path, in.Content)}
		}
		return sdk.SessionUpdate{ToolCall: &sdk.SessionUpdateToolCall{
			ToolCallId: sdk.ToolCallId(b.ID), Title: d.title, Kind: d.kind, Status: sdk.ToolCallStatusPending,
			Locations: d.locations, Content: d.content, RawInput: rawInput(b.Input),
		}}, true
	case keel.BlockToolResult:
		st := sdk.ToolCallStatusCompleted
		if b.IsError {
			st = sdk.ToolCallStatusFailed
		}
		u := &sdk.SessionToolCallUpdate{ToolCallId: sdk.ToolCallId(b.ToolUseID), Status: sdk.Ptr(st)}
		if text := resultText(b.Content); text != "" {
			u.Content = []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(text))}
		}
		return sdk.SessionUpdate{ToolCallUpdate: u}, true
	}
	return sdk.SessionUpdate{}, false
}
