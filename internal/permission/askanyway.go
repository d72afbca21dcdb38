package permission

import "context"

// AskAnyway puts req to the asker although the rules might allow it: a PreToolUse hook that
// answers "ask" outranks allow rules and modes, as in Claude Code. Deny rules still win
// first, and a mode that never asks (dontAsk) denies. reason and reasonType ("hook") are
// what the asker is told.
func (c *Checker) AskAnyway(ctx context.Context, req Request, reason, reasonType string) Decision {
	d := c.Evaluate(req)
	if d.Behavior == Deny && d.Rule != nil {
		c.denials.Record(d.Behavior)
		return d
	}
	if c.Policy().Mode == ModeDontAsk {
		d = Decision{Behavior: Deny, Reason: "dontAsk mode denies what is not pre-approved: " + reason}
		c.denials.Record(d.Behavior)
		return d
	}
	d = c.ask(ctx, req, Decision{Behavior: Ask, Reason: reason, ReasonType: reasonType, Suggestions: d.Suggestions})
	c.denials.Record(d.Behavior)
	return d
}
