package session

import (
	"context"

	"github.com/keel-dev/keel/internal/builtin"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/tool"
)

// Plan mode, as Claude Code has it: the model is told at the next request that it is
// planning (a reminder in the conversation, so the cached prefix holds), only read-only tools
// run and others are asked with the mode as the reason, and ExitPlanMode presents the plan.
// Its approval is a permission question (the terminal UI's plan dialog, the Agent SDK's
// canUseTool; headless, nobody approves and the plan stays in the refusal); an approval ends
// plan mode for the agent that planned, in the mode the answer chose (default unless it set
// one). ExitPlanMode is offered to the main agent only while it is in plan mode, as Claude
// Code does, and to a subagent whose definition runs it in plan mode.

// planReminder is what the model is told when a request goes out in plan mode.
const planReminder = "<system-reminder>\nPlan mode is active. The user wants a plan before anything changes: you MUST NOT edit files, run commands that change anything, or otherwise change the system yet — only read-only tools run. This overrides any other instruction.\n\n" +
	"Explore the code as far as you need, then write the plan: what you will change, in which files, in what order, and how you will check it. When it is complete, call ExitPlanMode with the whole plan (Markdown) as plan: that is how you ask for approval. Do not ask for approval any other way. If the user only asked a question, answer it without a plan.\n</system-reminder>"

// planExitedReminder follows an approval, once.
const planExitedReminder = "<system-reminder>\n## Exited Plan Mode\n\nYou have exited plan mode. You can now edit files, run tools and carry out the plan.\n</system-reminder>"

// planObserver tells the main agent when its requests start going out in plan mode, and once
// when that ended.
type planObserver struct{ s *Session }

func (o planObserver) Observe(context.Context) []message.Block {
	inPlan := o.s.checker.Policy().Mode == permission.ModePlan
	p := &o.s.plan
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case inPlan && !p.told:
		p.told = true
		return []message.Block{message.Text(planReminder)}
	case !inPlan && p.told:
		p.told = false
		return []message.Block{message.Text(planExitedReminder)}
	}
	return nil
}

// mainPlanFilter leaves ExitPlanMode out of the main agent's tools unless it is in plan mode.
func (s *Session) mainPlanFilter(p *tool.Pool) *tool.Pool {
	if s.checker != nil && s.checker.Policy().Mode == permission.ModePlan {
		return p
	}
	if _, ok := p.Lookup(builtin.ExitPlanModeName); !ok {
		return p
	}
	return p.Filter(func(t tool.Tool) bool { return t.Name() != builtin.ExitPlanModeName })
}
