package session

import (
	"context"
	"os"

	"github.com/keel-dev/keel/internal/cachewatch"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/message"
)

// hookInput fills the fields every hook event carries.
func (d *hookDispatch) hookInput(cwd string, in hooks.Input) hooks.Input {
	s := d.s
	in.SessionID = s.id
	in.TranscriptPath = s.TranscriptPath()
	in.Cwd = cwd
	in.PermissionMode = s.PermissionMode()
	return in
}

// stopHook runs the Stop hooks when the main agent ends its turn: exit 2 keeps it going with
// the hook's reason.
type stopHook struct{ s *Session }

func (h stopHook) CheckStop(ctx context.Context, last message.Message, active bool) string {
	out := h.s.hooks.Run(ctx, hooks.Stop, h.s.hookd.hookInput(h.s.Cwd(), hooks.Input{StopHookActive: active}))
	if out.Decision != hooks.DecisionBlock {
		return ""
	}
	if out.Reason == "" {
		return "A Stop hook asked you to continue."
	}
	return out.Reason
}

// subTotals is what the watcher counted between two snapshots.
func subTotals(now, before cachewatch.Totals) cachewatch.Totals {
	d := cachewatch.Totals{Hits: now.Hits - before.Hits, Misses: now.Misses - before.Misses, Breaks: now.Breaks - before.Breaks,
		ReadTokens: now.ReadTokens - before.ReadTokens, WriteTokens: now.WriteTokens - before.WriteTokens}
	for k, v := range now.ByKind {
		if n := v - before.ByKind[k]; n > 0 {
			if d.ByKind == nil {
				d.ByKind = map[string]int{}
			}
			d.ByKind[k] = n
		}
	}
	return d
}

func userHome() string {
	h, _ := os.UserHomeDir()
	return h
}

// messageDisplay runs the MessageDisplay hooks for an assistant message about to be shown;
// a hook's displayContent replaces the text shown (the history keeps what the model said).
func (d *hookDispatch) messageDisplay(ctx context.Context, e event.AssistantMessage) event.AssistantMessage {
	s := d.s
	text := e.Message.TextOf()
	if text == "" || e.Origin.AgentID != "" {
		return e
	}
	out := s.hooks.Run(ctx, hooks.MessageDisplay, d.hookInput(s.Cwd(), hooks.Input{Extra: map[string]any{
		"turn_id": s.currentTurn(), "message_id": e.RequestID, "index": 0, "final": true, "delta": text,
	}}))
	if out.DisplayContent == nil {
		return e
	}
	m := e.Message.Clone()
	var blocks []message.Block
	replaced := false
	for _, b := range m.Content {
		if b.Type == message.TypeText {
			if !replaced {
				blocks = append(blocks, message.Text(*out.DisplayContent))
				replaced = true
			}
			continue
		}
		blocks = append(blocks, b)
	}
	m.Content = blocks
	e.Message = m
	return e
}
