package session

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/keel-dev/keel/internal/cachewatch"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/permission"
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

// submitPrompt runs the UserPromptSubmit hooks; a block refuses the prompt, and additional
// context joins it.
func (d *hookDispatch) submitPrompt(ctx context.Context, prompt string, sink *chanSink) ([]message.Block, error) {
	s := d.s
	out := s.hooks.Run(ctx, hooks.UserPromptSubmit, d.hookInput(s.Cwd(), hooks.Input{Prompt: prompt}))
	for _, n := range out.Notices {
		sink.Emit(event.Notice{Level: "info", Text: n})
	}
	if out.Decision == hooks.DecisionBlock {
		return nil, fmt.Errorf("prompt blocked by a UserPromptSubmit hook: %s", out.Reason)
	}
	blocks := append([]message.Block{message.Text(prompt)}, attachments(ctx)...)
	s.mu.Lock()
	extra := append(s.startContext, out.AdditionalContext...)
	s.startContext = nil
	s.mu.Unlock()
	for _, c := range extra {
		blocks = append(blocks, message.Text(c))
	}
	return blocks, nil
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

// notifyingAsker runs the Notification hooks before a permission question is put, so a user
// away from the terminal can be told that keel waits for them.
type notifyingAsker struct {
	s     *Session
	inner permission.Asker
}

func (a notifyingAsker) Ask(ctx context.Context, r permission.AskRequest) (permission.Answer, error) {
	if a.s.sandboxAutoAllows(r) {
		return permission.AllowOnce(), nil
	}
	if ans, ok := a.s.hookd.permissionRequest(ctx, r); ok {
		return ans, nil
	}
	a.s.hooks.Run(ctx, hooks.Notification, a.s.hookd.hookInput(a.s.Cwd(), hooks.Input{
		Message: "keel needs your permission to use " + r.Request.Tool, NotificationType: "permission_prompt",
	}))
	return a.inner.Ask(ctx, r)
}

// permissionRequest runs the PermissionRequest hooks before a question is put: a hook may
// answer it (allow, with a rewritten input and permission updates, or deny). ok is false
// when no hook decided.
func (d *hookDispatch) permissionRequest(ctx context.Context, r permission.AskRequest) (permission.Answer, bool) {
	s := d.s
	input := r.Request.Input
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	out := s.hooks.Run(ctx, hooks.PermissionRequest, d.hookInput(s.Cwd(), hooks.Input{
		ToolName: r.Request.Tool, ToolInput: input, ToolUseID: r.Request.ToolUseID,
		Extra: map[string]any{"permission_suggestions": permission.Suggest(r, s.config.WorkingDirs())},
	}))
	for _, n := range append(out.Notices, out.SystemMessages...) {
		s.emit(event.Notice{Level: "info", Text: n})
	}
	switch out.Decision {
	case hooks.DecisionAllow:
		ans := permission.AllowOnce()
		ans.UpdatedInput = out.UpdatedInput
		ups, err := permission.ParseUpdates(out.UpdatedPermissions)
		if err != nil {
			s.emit(event.Notice{Level: "warn", Text: "PermissionRequest hook: " + err.Error() + "; the call is allowed without them"})
		}
		ans.Permissions = ups
		return ans, true
	case hooks.DecisionBlock:
		reason := out.Reason
		if reason == "" {
			reason = "denied by a PermissionRequest hook"
		}
		ans := permission.DenyAnswer(reason)
		ans.Interrupt = out.Interrupt
		return ans, true
	}
	return permission.Answer{}, false
}
