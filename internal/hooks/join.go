package hooks

import (
	"context"
	"strings"
)

// EventRunner runs the hooks of one event and folds their outcomes: *[Runner] is one, and
// so are joined runners (the session's and an agent's own). Every package that runs hooks
// takes it.
type EventRunner interface {
	Run(ctx context.Context, ev Event, in Input) Outcome
}

var _ EventRunner = (*Runner)(nil)

// joined runs one runner's hooks and then another's, folding their outcomes the way one
// runner folds its hooks: the most restrictive decision wins.
type joined struct{ a, b EventRunner }

// Join returns a runner of a's hooks and then b's (the session's and an agent's own);
// either may be nil.
func Join(a, b EventRunner) EventRunner {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return joined{a, b}
}

func (j joined) Run(ctx context.Context, ev Event, in Input) Outcome {
	o := j.a.Run(ctx, ev, in)
	if o.UpdatedInput != nil {
		in.ToolInput = o.UpdatedInput
	}
	p := j.b.Run(ctx, ev, in)
	switch {
	case p.Decision > o.Decision:
		o.Decision, o.Reason = p.Decision, p.Reason
	case p.Decision == o.Decision && p.Reason != "":
		o.Reason = strings.TrimSpace(o.Reason + "\n" + p.Reason)
	}
	if p.UpdatedInput != nil {
		o.UpdatedInput = p.UpdatedInput
	}
	if o.Decision == DecisionBlock {
		o.UpdatedInput = nil
	}
	o.AdditionalContext = append(o.AdditionalContext, p.AdditionalContext...)
	if p.StopSession && !o.StopSession {
		o.StopSession, o.StopReason = true, p.StopReason
	}
	o.SystemMessages = append(o.SystemMessages, p.SystemMessages...)
	o.Results = append(o.Results, p.Results...)
	o.Notices = append(o.Notices, p.Notices...)
	return o
}
