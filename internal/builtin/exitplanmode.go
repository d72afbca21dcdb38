package builtin

import (
	"context"
	"strings"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/tool"
)

// ExitPlanModeName is Claude Code's name for the tool that presents a plan for approval.
const ExitPlanModeName = "ExitPlanMode"

// ExitPlanModeInput is the tool's input, as Claude Code's: the plan in Markdown
// (allowedPrompts, deprecated there, is accepted and ignored).
type ExitPlanModeInput struct {
	Plan           string           `json:"plan"`
	AllowedPrompts []map[string]any `json:"allowedPrompts,omitempty"`
}

const exitPlanSchema = `{"type":"object","properties":{
"plan":{"type":"string","description":"The plan to present for approval, in Markdown."},
"allowedPrompts":{"type":"array","description":"Deprecated; ignored.","items":{"type":"object"}}},
"required":["plan"]}`

// ExitPlanMode returns the tool a model in plan mode calls with its plan. The approval is
// not the tool's: the permission check asks whoever answers for the agent (the terminal
// UI's plan dialog, the Agent SDK's canUseTool) and the session's gate ends plan mode when
// the answer allows it. By the time Run is called the plan has been approved.
func ExitPlanMode() tool.Tool {
	return tool.New(tool.Spec[ExitPlanModeInput]{
		Name:        ExitPlanModeName,
		Description: description("ExitPlanMode"),
		Schema:      []byte(exitPlanSchema),
		IsReadOnly:  tool.Always[ExitPlanModeInput],
		Run: func(_ context.Context, _ *tool.Env, in ExitPlanModeInput) tool.Result {
			if strings.TrimSpace(in.Plan) == "" {
				return tool.Errorf("plan is empty: pass the whole plan, in Markdown, as plan.")
			}
			text := "User has approved your plan. You can now start coding. Start with updating your todo list if applicable\n\n## Approved Plan:\n" + in.Plan
			return tool.Result{Content: []message.Block{message.Text(text)}, Output: map[string]any{"plan": in.Plan, "isAgent": false}}
		},
	})
}
