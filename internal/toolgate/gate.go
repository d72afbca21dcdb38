// Package toolgate is the gate every tool call of an agent passes (a [tool.Gate]): the
// PreToolUse hooks, then the permission check, before a call; the PostToolUse (or
// PostToolUseFailure) hooks after it. Around them it keeps the bookkeeping a call leaves:
// the denials a run reports, the files an edit will change (for rewind), the paths a call
// touched (for path-scoped rules), the language servers' diagnostics of an edit.
//
// What it needs of the session it names in [Config], as narrow interfaces and functions:
// the package knows no session, so a gate can be built and tested on its own.
package toolgate

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
)

// Checker is the permission check a gate asks; *[permission.Checker] is one.
type Checker interface {
	// Check decides a call, asking when the rules and mode leave it open.
	Check(ctx context.Context, req permission.Request) permission.Decision
	// Evaluate decides a call from the rules and mode alone, without asking.
	Evaluate(req permission.Request) permission.Decision
	// AskAnyway asks about a call even where an allow rule lets it through; only a deny
	// rule answers first.
	AskAnyway(ctx context.Context, req permission.Request, reason, reasonType string) permission.Decision
	Policy() permission.Policy
	SetMode(m permission.Mode)
	SearchFilter() (hide func(path string) bool, note func() string)
	Explicit(req permission.Request) bool
}

var _ Checker = (*permission.Checker)(nil)

// Validator checks a call's input against its tool's schema; *[tool.Validator] is one.
type Validator interface {
	Validate(t tool.Tool, input json.RawMessage) error
}

// Config is what a gate needs. Checker, Emit and Hooks are required; a nil function is a
// step the gate skips.
type Config struct {
	// Checker is the permission check of the agent the gate serves.
	Checker Checker
	// Origin marks the events the gate emits (empty for the main agent).
	Origin event.Origin
	// Emit sends the gate's events: denials and the hooks' notices.
	Emit func(event.Event)
	// Hooks runs the tool hooks (for a subagent, its own joined with the session's).
	Hooks hooks.EventRunner
	// HookInput completes a hook's input with what every hook is told (the session, the
	// transcript, the working directory cwd).
	HookInput func(cwd string, in hooks.Input) hooks.Input
	// Granted reports whether the allowed-tools of a skill running in the agent agentID
	// allow req, with the decision that does; deny rules still win.
	Granted func(agentID string, req permission.Request) (permission.Decision, bool)
	// Interrupt ends the main agent's run, for a refusal that asks to stop.
	Interrupt func()
	// Validator checks an input the approver rewrote.
	Validator Validator
	// Touched records the paths a call reads or changes.
	Touched func(paths []string)
	// TrackEdit keeps a file's content before an edit changes it, for rewind.
	TrackEdit func(path string)
	// Unrecoverable records a change rewind cannot undo: a Bash or MCP call that writes.
	Unrecoverable func(tool, description string)
	// LSP, when language servers run, hears of the files calls read and edit, and hands
	// back the problems an edit introduced.
	LSP LSP
	// RecordMode records the main agent's permission mode after an approved plan ended
	// plan mode.
	RecordMode func(mode string)
}

// Gate is one agent's [tool.Gate]. One gate serves one agent.
type Gate struct {
	c Config

	// mu guards denials and context.
	mu      sync.Mutex
	denials []event.PermissionDenied
	// context is what PreToolUse hooks added for a call, by tool_use id, for its result.
	context map[string][]string
}

var _ tool.Gate = (*Gate)(nil)

// New returns the gate c describes.
func New(c Config) *Gate {
	if c.HookInput == nil {
		c.HookInput = func(_ string, in hooks.Input) hooks.Input { return in }
	}
	return &Gate{c: c}
}

// Before runs the PreToolUse hooks and the permission check; it reports whether the call
// may run, and the result the model sees when it may not.
func (g *Gate) Before(ctx context.Context, env *tool.Env, t tool.Tool, call *tool.Call) (tool.Result, bool) {
	out := g.c.Hooks.Run(ctx, hooks.PreToolUse, g.c.HookInput(env.State.Cwd, hooks.Input{
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
		if res, refused := planExitRefused(g.c.Checker); refused {
			return res, false
		}
	}
	req := request(t, call.Input, env.State.Cwd)
	req.ToolUseID = call.ID
	d := g.decide(ctx, env, req, out)
	if d.Behavior != permission.Allow {
		if d.Interrupt && env.AgentID == "" && g.c.Interrupt != nil {
			g.c.Interrupt()
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
		if g.c.Validator != nil {
			if err := g.c.Validator.Validate(t, d.UpdatedInput); err != nil {
				g.deny(call, err.Error())
				return tool.Errorf("InputValidationError: the approved input of %s does not match its schema: %v", call.Name, err), false
			}
		}
		call.Input = d.UpdatedInput
		req = request(t, call.Input, env.State.Cwd)
	}
	g.admit(env, t, call, req)
	return tool.Result{}, true
}

// admit does what an allowed call brings about before it runs: an approved plan ends plan
// mode; the search filter, and WebFetch's question for private addresses, go into env; the
// paths it touches are noted, and an edit's files are kept for rewind and shown to the
// language servers.
func (g *Gate) admit(env *tool.Env, t tool.Tool, call *tool.Call, req permission.Request) {
	if call.Name == builtin.ExitPlanModeName {
		g.planApproved(env)
	}
	env.Hidden, env.HiddenNote = g.c.Checker.SearchFilter()
	if call.Name == "WebFetch" {
		// Only a rule naming the host lets WebFetch reach a private address (not a mode,
		// not a one-time answer); the tool asks when it dials.
		checker := g.c.Checker
		env.Explicit = func() bool { return checker.Explicit(req) }
	}
	// The tool acts on the paths the check judged, never on its input resolved again.
	env.Paths = req.Resolved
	if g.c.Touched != nil {
		g.c.Touched(req.Paths)
	}
	if !req.ReadOnly && isFileEdit(call.Name) {
		if g.c.TrackEdit != nil {
			for _, p := range req.Resolved {
				g.c.TrackEdit(p.Real)
			}
		}
		lspBefore(g.c.LSP, env, *call)
	}
}

// decide is the permission check of a call, given what the PreToolUse hooks decided.
func (g *Gate) decide(ctx context.Context, env *tool.Env, req permission.Request, out hooks.Outcome) permission.Decision {
	switch out.Decision {
	case hooks.DecisionAllow:
		// A hook's allow skips the question, never a deny rule.
		d := g.c.Checker.Evaluate(req)
		if d.Behavior == permission.Ask {
			d.Behavior = permission.Allow
		}
		return d
	case hooks.DecisionAsk:
		// As Claude Code: a hook's ask asks even where an allow rule would let the call
		// through; only a deny rule answers first.
		return g.c.Checker.AskAnyway(ctx, req, cmp.Or(out.Reason, "a PreToolUse hook asks for approval"), "hook")
	}
	// A running inline skill's allowed-tools pass without asking; deny rules still win.
	if g.c.Granted != nil {
		if d, ok := g.c.Granted(env.AgentID, req); ok {
			return d
		}
	}
	return g.c.Checker.Check(ctx, req)
}

// isFileEdit names the tools whose changes rewind can undo.
func isFileEdit(name string) bool {
	switch name {
	case "Write", "Edit", "MultiEdit", "NotebookEdit":
		return true
	}
	return false
}

// After runs the PostToolUse hooks of a call that worked (PostToolUseFailure of one that
// failed) and adds to its result what the hooks and the language servers have to say.
func (g *Gate) After(ctx context.Context, env *tool.Env, t tool.Tool, call tool.Call, res *tool.Result) {
	if (call.Name == "Bash" || tool.IsMCP(call.Name)) && !t.ReadOnly(call.Input) && !res.IsError && g.c.Unrecoverable != nil {
		g.c.Unrecoverable(call.Name, string(call.Input))
	}
	var out hooks.Outcome
	if res.IsError {
		// A failed call has its own event; PostToolUse is for calls that worked.
		out = g.c.Hooks.Run(ctx, hooks.PostToolUseFailure, g.c.HookInput(env.State.Cwd, hooks.Input{
			ToolName: call.Name, ToolInput: call.Input, ToolUseID: call.ID, AgentID: env.AgentID,
			Extra: map[string]any{"error": res.ResultText(), "is_interrupt": ctx.Err() != nil},
		}))
	} else {
		response, _ := json.Marshal(resultForHook(*res))
		out = g.c.Hooks.Run(ctx, hooks.PostToolUse, g.c.HookInput(env.State.Cwd, hooks.Input{
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
	lspAfter(ctx, g.c.LSP, env, call, res, g.c.Emit)
}

// permissionDenied runs the PermissionDenied hooks for a call the permission check refused;
// it reports whether a hook lets the model retry.
func (g *Gate) permissionDenied(ctx context.Context, env *tool.Env, call *tool.Call, reason string) bool {
	out := g.c.Hooks.Run(ctx, hooks.PermissionDenied, g.c.HookInput(env.State.Cwd, hooks.Input{
		ToolName: call.Name, ToolInput: call.Input, ToolUseID: call.ID, AgentID: env.AgentID,
		Extra: map[string]any{"reason": reason},
	}))
	g.notify(out)
	return out.Retry
}

func (g *Gate) deny(call *tool.Call, reason string) {
	d := event.PermissionDenied{Origin: g.c.Origin, ToolUseID: call.ID, ToolName: call.Name, Input: call.Input, Reason: reason}
	g.mu.Lock()
	g.denials = append(g.denials, d)
	g.mu.Unlock()
	g.c.Emit(d)
}

// TakeDenials returns and clears the denials recorded so far.
func (g *Gate) TakeDenials() []event.PermissionDenied {
	g.mu.Lock()
	defer g.mu.Unlock()
	d := g.denials
	g.denials = nil
	return d
}

func (g *Gate) notify(out hooks.Outcome) {
	for _, n := range out.Notices {
		g.c.Emit(event.Notice{Origin: g.c.Origin, Level: "info", Text: n})
	}
	for _, m := range out.SystemMessages {
		g.c.Emit(event.Notice{Origin: g.c.Origin, Level: "info", Text: m})
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

// request describes a call for the permission engine, its paths resolved once: the check
// judges them, and [Gate.admit] hands them to the tool.
func request(t tool.Tool, input json.RawMessage, cwd string) permission.Request {
	req := permission.RequestFor(t.Name(), t.ReadOnly(input), input, cwd)
	req.Resolve()
	return req
}
