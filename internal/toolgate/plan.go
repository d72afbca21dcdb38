package toolgate

import (
	"encoding/json"

	"github.com/keel-dev/keel/internal/builtin"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/tool"
)

// ExitPlanMode's approval is a permission question; an approval ends plan mode for the agent
// that planned, in the mode the answer chose (default unless it set one).

// planExitRefused answers an ExitPlanMode call made outside plan mode, before any question.
func planExitRefused(checker Checker) (tool.Result, bool) {
	if checker.Policy().Mode == permission.ModePlan {
		return tool.Result{}, false
	}
	return tool.Errorf("You are not in plan mode. ExitPlanMode is only for presenting a plan while in plan mode; go on with the task."), true
}

// planDenied is the refusal of a plan: the answer's reason and, so that a headless run still
// hands its plan back, the plan itself.
func planDenied(call *tool.Call, reason string) string {
	var in builtin.ExitPlanModeInput
	_ = json.Unmarshal(call.Input, &in) // a malformed input has no plan to repeat
	msg := "The user did not approve the plan; stay in plan mode. " + reason
	if in.Plan != "" {
		msg += "\n\nThe plan that was not approved:\n" + in.Plan
	}
	return msg
}

// planApproved ends plan mode for the agent whose ExitPlanMode call was allowed, unless the
// answer already chose another mode; the main agent's change is recorded and announced.
func (g *Gate) planApproved(env *tool.Env) {
	if g.c.Checker.Policy().Mode == permission.ModePlan {
		g.c.Checker.SetMode(permission.ModeDefault)
	}
	if env.AgentID != "" {
		return
	}
	mode := string(g.c.Checker.Policy().Mode)
	if g.c.RecordMode != nil {
		g.c.RecordMode(mode)
	}
	g.c.Emit(event.Status{PermissionMode: mode})
}
