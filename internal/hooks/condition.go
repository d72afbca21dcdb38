package hooks

import (
	"fmt"

	"github.com/keel-dev/keel/internal/lazy"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/settings"
)

// hook is one command hook with its `if` compiled.
type hook struct {
	cmd settings.HookCommand
	// cond is the hook's `if`; nil when it has none, or when the rule does not parse (the
	// hook then runs on every call it is matched for: a filter that cannot be read fails
	// open, as Claude Code's does).
	cond *permission.Condition
	// never is set for an `if` on an event that is not about a tool call: Claude Code never
	// runs such a hook, so neither does keel.
	never bool
}

// toolEvents are the events an `if` is evaluated on, as Claude Code's hooks reference lists
// them; on any other event a hook with `if` set never runs.
var toolEvents = lazy.Value[map[Event]bool]{New: func() map[Event]bool {
	return map[Event]bool{
		PreToolUse: true, PostToolUse: true, PostToolUseFailure: true, PermissionRequest: true, PermissionDenied: true,
	}
}}

// compileHook reads h's `if`; problem says what about it the user should know.
func compileHook(ev Event, h settings.HookCommand) (c hook, problem string) {
	c = hook{cmd: h}
	if h.If == "" {
		return c, ""
	}
	if !toolEvents.Get()[ev] {
		c.never = true
		return c, fmt.Sprintf("hook %q has \"if\": %q, which only tool events (PreToolUse, PostToolUse, PostToolUseFailure, PermissionRequest, PermissionDenied) evaluate; it never runs", h.Command, h.If)
	}
	cond, err := permission.ParseCondition(h.If)
	if err != nil {
		return c, fmt.Sprintf("hook %q: \"if\" %v; the hook runs on every matching call", h.Command, err)
	}
	c.cond = &cond
	return c, ""
}

// condition reports whether h's `if` lets it run for in.
func (r *Runner) condition(ev Event, h hook, in Input) bool {
	switch {
	case h.never:
		return false
	case h.cond == nil:
		return true
	}
	cwd := in.Cwd
	if cwd == "" {
		cwd = r.cfg.ProjectDir
	}
	return h.cond.Matches(in.ToolName, in.ToolInput, cwd, r.cfg.Home)
}
