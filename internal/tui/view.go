package tui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/keel-dev/keel"
)

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// View draws the screen: the transcript fills what the bottom part leaves.
func (m *Model) View() tea.View {
	v := tea.NewView(m.frameText())
	v.AltScreen = true
	v.WindowTitle = "keel"
	return v
}

// frameText is the whole frame as text (ANSI-styled), height lines at most.
func (m *Model) frameText() string {
	if m.quitting {
		return ""
	}
	bottom := m.bottom()
	bh := lipgloss.Height(bottom)
	avail := max(m.hgt-bh, 1)
	lines := m.transcriptLines()
	end := max(len(lines)-m.scroll, 0)
	if m.scroll > 0 && end < avail {
		end = min(avail, len(lines))
		m.scroll = len(lines) - end
	}
	start := max(end-avail, 0)
	shown := lines[start:end]
	pad := avail - len(shown)
	var b strings.Builder
	for _, l := range shown {
		b.WriteString(ansi.Truncate(l, m.width, "") + "\n")
	}
	b.WriteString(strings.Repeat("\n", pad))
	b.WriteString(bottom)
	return b.String()
}

func (m *Model) transcriptLines() []string {
	if m.team.focus != nil {
		return m.focusLines()
	}
	var out []string
	if len(m.items) == 0 {
		out = append(out, m.st.accent.Render("✻ keel")+m.st.dim.Render(" "+m.cfg.Version+" · "+m.cwd), m.st.dim.Render("  /help for commands · esc to interrupt · ctrl+c twice to quit"), "")
	}
	if m.first > 0 {
		out = append(out, m.earlierLine(), "")
	}
	for _, it := range m.items[min(m.first, len(m.items)):] {
		s := m.renderItem(it)
		if s == "" {
			continue
		}
		out = append(out, strings.Split(s, "\n")...)
		out = append(out, "")
	}
	return out
}

// bottom is everything under the transcript: tasks, spinner, prompt or input, status.
func (m *Model) bottom() string {
	var parts []string
	if p := m.tasksPanel(); p != "" {
		parts = append(parts, p)
	}
	if p := m.teamPanel(); p != "" {
		parts = append(parts, p)
	}
	if m.working {
		el := m.now().Sub(m.runStart)
		tok := m.runTokens + int64(m.deltaLen/4)
		parts = append(parts, m.st.accent.Render(spinnerFrames[m.frame%len(spinnerFrames)])+" "+
			m.st.accent.Render("Working…")+m.st.dim.Render(fmt.Sprintf(" (%ds · ↓ %s tokens · esc to interrupt)", int(el.Seconds()), fmtTokens(tok))))
	}
	switch {
	case m.picker != nil:
		parts = append(parts, m.pickerBox())
	case len(m.asks) > 0:
		parts = append(parts, m.askBox())
		if m.askReason {
			parts = append(parts, m.inputBox("Tell keel what to do instead (enter to send, esc to just deny)"))
		}
	case len(m.forms) > 0:
		parts = append(parts, m.formBox())
	case m.lineAsk != nil:
		parts = append(parts, m.inputBox(m.lineAsk.label+" (enter adds, esc cancels)"))
	default:
		parts = append(parts, m.inputBox(""))
		if c := m.complMenu(); c != "" {
			parts = append(parts, c)
		}
	}
	if s := m.statusLineView(); s != "" {
		parts = append(parts, s)
	}
	if m.hint != "" {
		parts = append(parts, m.st.warn.Render(ansi.Truncate(m.hint, m.width, "…")))
	}
	parts = append(parts, m.statusLine())
	return strings.Join(parts, "\n")
}

func (m *Model) inputBox(label string) string {
	rule := m.st.dim.Render(strings.Repeat("─", m.width))
	s := rule + "\n" + m.input.View() + "\n" + rule
	if label != "" {
		s = m.st.dim.Render(label) + "\n" + s
	}
	return s
}

func (m *Model) complMenu() string {
	c := m.compl
	if c.kind == 0 {
		return ""
	}
	first := 0
	if c.sel >= complShown {
		first = c.sel - complShown + 1
	}
	var lines []string
	for i := first; i < len(c.items) && i < first+complShown; i++ {
		it := c.items[i]
		val := fmt.Sprintf("%-16s", it.value)
		l := "  " + val + " " + m.st.dim.Render(it.desc)
		if i == c.sel {
			l = m.st.sel.Render("❯ "+val) + " " + m.st.dim.Render(it.desc)
		}
		lines = append(lines, ansi.Truncate(l, m.width, "…"))
	}
	return strings.Join(lines, "\n")
}

func (m *Model) tasksPanel() string {
	var lines []string
	for _, t := range m.tasks {
		if t.status != "running" && t.status != "pending" && len(m.tasks) > 4 {
			continue
		}
		mark := m.st.accent.Render("◐")
		switch t.status {
		case "completed":
			mark = m.st.ok.Render("✓")
		case "failed", "killed", "stopped":
			mark = m.st.fail.Render("✗")
		}
		l := fmt.Sprintf("%s %s", mark, t.desc)
		if t.kind != "" {
			l += m.st.dim.Render(" (" + t.kind + ")")
		}
		l += m.st.dim.Render(" · " + t.status)
		if t.summary != "" {
			l += m.st.dim.Render(" · " + firstLineOf(t.summary))
		}
		lines = append(lines, ansi.Truncate(l, m.width, "…"))
	}
	if len(lines) == 0 {
		return ""
	}
	return m.st.dim.Render("Tasks") + "\n" + strings.Join(lines, "\n")
}

func (m *Model) statusLine() string {
	mode := m.b.PermissionMode()
	var modeText string
	switch mode {
	case keel.ModeAcceptEdits:
		modeText = m.st.ok.Render("⏵⏵ accept edits")
	case keel.ModePlan:
		modeText = m.st.accent.Render("⏸ plan mode")
	case keel.ModeDefault:
		modeText = m.st.dim.Render("default mode")
	default:
		modeText = m.st.warn.Render(string(mode))
	}
	left := m.b.Model() + " · " + modeText
	if m.vim.on {
		left = map[bool]string{true: "NORMAL", false: "INSERT"}[m.vim.normal] + " · " + left
	}
	if m.loop != nil {
		left += " · " + m.st.accent.Render(m.loopStatus())
	}
	if m.warnings > 0 {
		left += " · " + m.st.warn.Render(warningCount(m.warnings))
	}
	u := m.usage
	share := 0
	if in := u.TotalInput(); in > 0 {
		share = int(u.CacheReadInputTokens * 100 / in)
	}
	right := fmt.Sprintf("ctx %d%% · %s tok · %scache %d%%", m.ctxUsed*100/max(m.window, 1),
		fmtTokens(u.TotalInput()+u.OutputTokens), m.statusCost(), share)
	gap := m.width - lipgloss.Width(left) - lipgloss.Width(right)
	if hint := m.st.dim.Render(" (shift+tab)"); gap > lipgloss.Width(hint) {
		left += hint
		gap -= lipgloss.Width(hint)
	}
	if gap < 1 {
		return ansi.Truncate(left+" · "+right, m.width, "…")
	}
	return left + strings.Repeat(" ", gap) + m.st.status.Render(right)
}

func warningCount(n int) string {
	if n == 1 {
		return "⚠ 1 warning"
	}
	return fmt.Sprintf("⚠ %d warnings", n)
}
