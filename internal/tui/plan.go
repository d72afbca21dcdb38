package tui

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/keel-dev/keel"
)

// The plan dialog: a model in plan mode presents its plan with ExitPlanMode, which reaches
// the terminal as a permission question. The dialog shows the plan and offers to approve it,
// leaving plan mode for acceptEdits or for default (edits asked one by one), or to keep
// planning with feedback, which goes back to the model as the refusal's reason.

// planTool is Claude Code's name for the plan-presenting tool.
const planTool = "ExitPlanMode"

// The plan dialog's choices, besides askNo ("keep planning", with feedback).
const (
	askPlanAcceptEdits askChoice = iota + 100
	askPlanDefault
)

// isPlan says req is a plan to approve.
func isPlan(req keel.PermissionRequest) bool { return req.Tool == planTool }

// planChoices are the plan dialog's answers, in order.
func planChoices() []askChoice { return []askChoice{askPlanAcceptEdits, askPlanDefault, askNo} }

// planLabel names a plan dialog choice; ok is false for a choice of the ordinary box.
func planLabel(c askChoice) (string, bool) {
	switch c {
	case askPlanAcceptEdits:
		return "Yes, and accept edits (acceptEdits)", true
	case askPlanDefault:
		return "Yes, and ask before each edit (default)", true
	case askNo:
		return "No, keep planning (tell keel what to change)", true
	}
	return "", false
}

// planText is the plan of an ExitPlanMode request.
func planText(req keel.PermissionRequest) string {
	var in struct {
		Plan string `json:"plan"`
	}
	_ = json.Unmarshal(req.Input, &in) // a malformed input shows as an empty plan
	return strings.TrimSpace(in.Plan)
}

// planBox renders the plan dialog.
func (m *Model) planBox(req keel.PermissionRequest) string {
	inner := max(m.width-4, 20)
	var b strings.Builder
	b.WriteString(m.st.accent.Render("Ready to code?") + " Here is the plan:\n\n")
	plan := planText(req)
	if plan == "" {
		plan = "(the plan is empty)"
	}
	for _, line := range strings.Split(plan, "\n") {
		b.WriteString(ansi.Wrap("  "+line, inner, " ") + "\n")
	}
	b.WriteString("\nWould you like to proceed?\n")
	choices := planChoices()
	for i, c := range choices {
		label, _ := planLabel(c)
		l := fmt.Sprintf("  %d. %s", i+1, label)
		if i == m.askSel {
			l = m.st.sel.Render(fmt.Sprintf("❯ %d. %s", i+1, label))
		}
		b.WriteString(ansi.Truncate(l, inner, "…"))
		if i < len(choices)-1 {
			b.WriteString("\n")
		}
	}
	return m.st.box.Width(m.width).Render(b.String())
}

// answerPlan approves the plan in the chosen mode: the mode is switched before the answer,
// so plan mode ends in it (the session would otherwise return to default).
func (m *Model) answerPlan(c askChoice) {
	mode := keel.ModeDefault
	if c == askPlanAcceptEdits {
		mode = keel.ModeAcceptEdits
	}
	if err := m.b.SetPermissionMode(mode); err != nil {
		m.errorf("could not leave plan mode: " + err.Error())
	}
	m.replyAsk(keel.PermissionAnswer{Allow: true})
}
