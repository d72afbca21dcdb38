package session

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/keel-dev/keel/internal/builtin"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/toolpath"
)

// gate is the session's tool.Gate: PreToolUse hooks, then the permission check, before a
// call; PostToolUse hooks after. One gate serves one agent.
type gate struct {
	s       *Session
	checker *permission.Checker
	origin  event.Origin
	emit    func(event.Event)
	// hooks runs the tool hooks; nil means the session's. A subagent's joins its own.
	hooks hooks.EventRunner

	// mu guards denials and context.
	mu      sync.Mutex
	denials []event.PermissionDenied
	// context is what PreToolUse hooks added for a call, by tool_use id, for its result.
	context map[string][]string
}

var _ tool.Gate = (*gate)(nil)

func (g *gate) Before(ctx context.Context, env *tool.Env, t tool.Tool, call *tool.Call) (tool.Result, bool) {
	out := g.runHooks(ctx, hooks.PreToolUse, g.s.hookd.hookInput(env.State.Cwd, hooks.Input{
		ToolName: call.Name, ToolInput: call.Input, ToolUseID: call.ID, AgentID: env.AgentID,
	}))
	g.notify(out)
	if out.Decision == hooks.DecisionBlock {
		reason := out.Reason
		if reason == "" {
			reason = "blocked by a PreToolUse hook"
		}
		g.deny(call, reason)
		return tool.Errorf("%s", reason), false
	}
	if out.UpdatedInput != nil {
		call.Input = out.UpdatedInput
	}
	if len(out.AdditionalContext) > 0 {
		g.mu.Lock()
		if g.context == nil {
			g.context = map[string][]string{}
		}
		g.context[call.ID] = out.AdditionalContext
		g.mu.Unlock()
	}
	if call.Name == builtin.ExitPlanModeName {
		if res, refused := planExitRefused(g.checker); refused {
			return res, false
		}
	}
	req := permissionRequest(t, call.Input, env.State.Cwd)
	req.ToolUseID = call.ID
	var d permission.Decision
	switch out.Decision {
	case hooks.DecisionAllow:
		// A hook's allow skips the question, never a deny rule.
		if d = g.checker.Evaluate(req); d.Behavior == permission.Ask {
			d.Behavior = permission.Allow
		}
	case hooks.DecisionAsk:
		// As Claude Code: a hook's ask asks even where an allow rule would let the call
		// through; only a deny rule answers first.
		d = g.checker.AskAnyway(ctx, req, cmp.Or(out.Reason, "a PreToolUse hook asks for approval"), "hook")
	default:
		// A running inline skill's allowed-tools pass without asking; deny rules still win.
		if rules := g.s.grants.Rules(env.AgentID); len(rules) > 0 {
			if d = g.s.sk.evaluateWith(rules, req); d.Behavior == permission.Allow {
				break
			}
		}
		d = g.checker.Check(ctx, req)
	}
	if d.Behavior != permission.Allow {
		if d.Interrupt && env.AgentID == "" {
			g.s.sdk.interrupt()
		}
		g.deny(call, d.Reason)
		msg := fmt.Sprintf("Permission to use %s was denied. %s", call.Name, d.Reason)
		if call.Name == builtin.ExitPlanModeName {
			msg = planDenied(call, d.Reason)
		}
		if g.permissionDenied(ctx, env, call, d.Reason) {
			msg += " You may try this call again."
		}
		return tool.Errorf("%s", msg), false
	}
	if d.UpdatedInput != nil {
		// Whoever approved the call rewrote it; the new input must still fit the tool.
		if err := g.s.validator.Validate(t, d.UpdatedInput); err != nil {
			g.deny(call, err.Error())
			return tool.Errorf("InputValidationError: the approved input of %s does not match its schema: %v", call.Name, err), false
		}
		call.Input = d.UpdatedInput
		req = permissionRequest(t, call.Input, env.State.Cwd)
	}
	if call.Name == builtin.ExitPlanModeName {
		g.planApproved(env)
	}
	env.Hidden, env.HiddenNote = g.checker.SearchFilter()
	if call.Name == "WebFetch" {
		// Only a rule naming the host lets WebFetch reach a private address (not a mode,
		// not a one-time answer); the tool asks when it dials.
		checker := g.checker
		env.Explicit = func() bool { return checker.Explicit(req) }
	}
	g.s.noteTouched(req.Paths)
	if !req.ReadOnly && isFileEdit(call.Name) {
		for _, p := range req.Paths {
			g.s.undo.trackEdit(toolpath.Resolve(p, env.State.Cwd, "").Real)
		}
		lspBefore(g.s.lsp, env, t, *call)
	}
	return tool.Result{}, true
}

// isFileEdit names the tools whose changes rewind can undo.
func isFileEdit(name string) bool {
	switch name {
	case "Write", "Edit", "MultiEdit", "NotebookEdit":
		return true
	}
	return false
}

func (g *gate) After(ctx context.Context, env *tool.Env, t tool.Tool, call tool.Call, res *tool.Result) {
	if (call.Name == "Bash" || tool.IsMCP(call.Name)) && !t.ReadOnly(call.Input) && !res.IsError {
		g.s.undo.noteUnrecoverable(call.Name, string(call.Input))
	}
	var out hooks.Outcome
	if res.IsError {
		// A failed call has its own event; PostToolUse is for calls that worked.
		out = g.runHooks(ctx, hooks.PostToolUseFailure, g.s.hookd.hookInput(env.State.Cwd, hooks.Input{
			ToolName: call.Name, ToolInput: call.Input, ToolUseID: call.ID, AgentID: env.AgentID,
			Extra: map[string]any{"error": res.ResultText(), "is_interrupt": ctx.Err() != nil},
		}))
	} else {
		response, _ := json.Marshal(resultForHook(*res))
		out = g.runHooks(ctx, hooks.PostToolUse, g.s.hookd.hookInput(env.State.Cwd, hooks.Input{
			ToolName: call.Name, ToolInput: call.Input, ToolResponse: response, ToolUseID: call.ID, AgentID: env.AgentID,
		}))
	}
	g.notify(out)
	g.mu.Lock()
	extra := append(g.context[call.ID], out.AdditionalContext...)
	delete(g.context, call.ID)
	g.mu.Unlock()
	if out.Decision == hooks.DecisionBlock && out.Reason != "" {
		extra = append(extra, out.Reason)
	}
	for _, c := range extra {
		res.Content = append(res.Content, message.Text(c))
	}
	// After the hooks: a PostToolUse formatter may have changed the file again.
	lspAfter(ctx, g.s.lsp, env, t, call, res, g.emit)
}

// permissionDenied runs the PermissionDenied hooks for a call the permission check refused;
// it reports whether a hook lets the model retry.
func (g *gate) permissionDenied(ctx context.Context, env *tool.Env, call *tool.Call, reason string) bool {
	out := g.runHooks(ctx, hooks.PermissionDenied, g.s.hookd.hookInput(env.State.Cwd, hooks.Input{
		ToolName: call.Name, ToolInput: call.Input, ToolUseID: call.ID, AgentID: env.AgentID,
		Extra: map[string]any{"reason": reason},
	}))
	g.notify(out)
	return out.Retry
}

func (g *gate) runHooks(ctx context.Context, ev hooks.Event, in hooks.Input) hooks.Outcome {
	if g.hooks != nil {
		return g.hooks.Run(ctx, ev, in)
	}
	return g.s.hooks.Run(ctx, ev, in)
}

func (g *gate) deny(call *tool.Call, reason string) {
	d := event.PermissionDenied{Origin: g.origin, ToolUseID: call.ID, ToolName: call.Name, Input: call.Input, Reason: reason}
	g.mu.Lock()
	g.denials = append(g.denials, d)
	g.mu.Unlock()
	g.emit(d)
}

// takeDenials returns and clears the denials recorded so far.
func (g *gate) takeDenials() []event.PermissionDenied {
	g.mu.Lock()
	defer g.mu.Unlock()
	d := g.denials
	g.denials = nil
	return d
}

func (g *gate) notify(out hooks.Outcome) {
	for _, n := range out.Notices {
		g.emit(event.Notice{Origin: g.origin, Level: "info", Text: n})
	}
	for _, m := range out.SystemMessages {
		g.emit(event.Notice{Origin: g.origin, Level: "info", Text: m})
	}
}

// resultForHook is the tool_response a PostToolUse hook reads: the tool's structured output
// when it has one, else its text.
func resultForHook(r tool.Result) any {
	if r.Output != nil {
		return r.Output
	}
	return map[string]any{"content": r.ResultText(), "is_error": r.IsError}
}

// permissionRequest describes a call for the permission engine.
func permissionRequest(t tool.Tool, input json.RawMessage, cwd string) permission.Request {
	return permission.RequestFor(t.Name(), t.ReadOnly(input), input, cwd)
}
