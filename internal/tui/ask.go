package tui

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/keel-dev/keel"
)

// askChoice is one answer the permission box offers.
type askChoice int

const (
	askYes askChoice = iota
	askAlways
	askAllEdits
	askNo
)

// editTools are the tools "allow all edits this session" (acceptEdits) lets through.
var editTools = []string{"Edit", "Write", "MultiEdit", "NotebookEdit"}

// askChoices are the answers offered for req, in order: yes, don't ask again (when a rule
// would cover the call), allow all edits this session (for an edit in default mode), no.
func (m *Model) askChoices(req keel.PermissionRequest) []askChoice {
	if isPlan(req) {
		return planChoices()
	}
	out := []askChoice{askYes}
	if len(req.Suggestions) > 0 {
		out = append(out, askAlways)
	}
	if slices.Contains(editTools, req.Tool) && m.b.PermissionMode() == keel.ModeDefault {
		out = append(out, askAllEdits)
	}
	return append(out, askNo)
}

func (m *Model) askLabel(c askChoice, req keel.PermissionRequest) string {
	if l, ok := planLabel(c); ok && isPlan(req) {
		return l
	}
	switch c {
	case askYes:
		return "Yes"
	case askAlways:
		return "Yes, and don't ask again for " + strings.Join(req.Suggestions, ", ")
	case askAllEdits:
		return "Yes, allow all edits this session (shift+tab)"
	}
	return "No, and tell keel what to do differently (esc: just no)"
}

func (m *Model) askBox() string {
	a := m.asks[0].req
	if isPlan(a) {
		return m.planBox(a)
	}
	who := "keel"
	if a.Agent != "" {
		who = m.st.agentColor(a.AgentColor).Render(a.Agent)
	}
	var what string
	switch {
	case a.Command != "":
		what = a.Command
	case len(a.Paths) > 0:
		what = strings.Join(a.Paths, ", ")
	case a.URL != "":
		what = a.URL
	}
	inner := max(m.width-4, 20)
	var b strings.Builder
	b.WriteString(m.st.accent.Render(a.Tool) + " · asked by " + who + "\n")
	if what != "" {
		b.WriteString(ansi.Wrap("  "+what, inner, " ") + "\n")
	}
	if a.Description != "" {
		b.WriteString(m.st.dim.Render(ansi.Wrap("  "+a.Description, inner, " ")) + "\n")
	}
	if a.Reason != "" {
		b.WriteString(m.st.dim.Render(ansi.Wrap(a.Reason, inner, " ")) + "\n")
	}
	b.WriteString("Do you want to proceed?\n")
	choices := m.askChoices(a)
	for i, c := range choices {
		l := fmt.Sprintf("  %d. %s", i+1, m.askLabel(c, a))
		if i == m.askSel {
			l = m.st.sel.Render(fmt.Sprintf("❯ %d. %s", i+1, m.askLabel(c, a)))
		}
		b.WriteString(ansi.Truncate(l, inner, "…"))
		if i < len(choices)-1 {
			b.WriteString("\n")
		}
	}
	return m.st.box.Width(m.width).Render(b.String())
}

// askKey handles a key while a permission prompt is open: ↑/↓ and enter, a choice's number,
// y, a (don't ask again), n (no, with a reason) or esc (no).
func (m *Model) askKey(k string) tea.Cmd {
	choices := m.askChoices(m.asks[0].req)
	switch k {
	case "up", "k":
		m.askSel = (m.askSel + len(choices) - 1) % len(choices)
	case "down", "j", "tab":
		m.askSel = (m.askSel + 1) % len(choices)
	case "y":
		return m.answerAsk(askYes)
	case "a":
		if slices.Contains(choices, askAlways) {
			return m.answerAsk(askAlways)
		}
	case "n":
		return m.answerAsk(askNo)
	case "esc":
		m.replyAsk(keel.PermissionAnswer{Reason: "the user denied this call"})
	case "enter":
		return m.answerAsk(choices[m.askSel])
	default:
		if len(k) == 1 && k[0] >= '1' && int(k[0]-'1') < len(choices) {
			return m.answerAsk(choices[k[0]-'1'])
		}
	}
	return nil
}

func (m *Model) answerAsk(c askChoice) tea.Cmd {
	req := m.asks[0].req
	switch c {
	case askYes:
		m.replyAsk(keel.PermissionAnswer{Allow: true})
	case askAlways:
		m.replyAsk(keel.PermissionAnswer{Allow: true, Always: true})
		m.always = append(m.always, req.Suggestions...)
		if err := persistRules(m.cwd, req.Suggestions); err != nil {
			m.errorf("could not save the rule: " + err.Error())
		}
	case askPlanAcceptEdits, askPlanDefault:
		m.answerPlan(c)
	case askAllEdits:
		if err := m.b.SetPermissionMode(keel.ModeAcceptEdits); err != nil {
			m.errorf("could not switch to accepting edits: " + err.Error())
		}
		m.replyAsk(keel.PermissionAnswer{Allow: true})
	case askNo:
		m.askSel = len(m.askChoices(req)) - 1
		m.askReason = true
		m.input.Reset()
	}
	return nil
}

// replyAsk answers the open ask and closes it.
func (m *Model) replyAsk(ans keel.PermissionAnswer) {
	m.asks[0].reply <- ans
	m.asks, m.askSel = m.asks[1:], 0
}

// denyWithReason answers the open ask with the text typed in the input.
func (m *Model) denyWithReason() {
	reason := strings.TrimSpace(m.input.Value())
	if reason == "" {
		reason = "the user denied this call"
	} else {
		reason = "the user denied this call: " + reason
	}
	m.replyAsk(keel.PermissionAnswer{Reason: reason})
	m.askReason = false
	m.input.Reset()
}

// persistRules adds rules to permissions.allow of .keel/settings.local.json, keeping
// everything else in the file.
func persistRules(cwd string, rules []string) error {
	if len(rules) == 0 {
		return nil
	}
	path := filepath.Join(cwd, ".keel", "settings.local.json")
	doc := map[string]any{}
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &doc); err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
	}
	perms, _ := doc["permissions"].(map[string]any)
	if perms == nil {
		perms = map[string]any{}
	}
	var allow []string
	if list, ok := perms["allow"].([]any); ok {
		for _, r := range list {
			if s, ok := r.(string); ok {
				allow = append(allow, s)
			}
		}
	}
	for _, r := range rules {
		if !slices.Contains(allow, r) {
			allow = append(allow, r)
		}
	}
	perms["allow"] = allow
	doc["permissions"] = perms
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
