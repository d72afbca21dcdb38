package tui

import (
	"context"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// TrustChoice is the answer to the first-run trust question.
type TrustChoice int

// The answers. The zero value, not trusting, is what Esc and a closed input give.
const (
	// TrustNo keeps the workspace untrusted: its files may narrow what keel does, never widen it.
	TrustNo TrustChoice = iota
	// TrustSession trusts it for this run only (like --trust).
	TrustSession
	// TrustAlways records the trust (like `keel trust`).
	TrustAlways
)

// TrustQuestion is what the trust prompt shows: the project directory and the files in it
// that take effect only once it is trusted.
type TrustQuestion struct {
	Dir      string
	Provides []string
}

var trustOptions = []string{
	"Yes, trust this folder",
	"Yes, for this session only",
	"No, continue without trusting it (esc)",
}

// trustModel is the one-question program asked before the session opens, so that nothing the
// workspace provides has run yet when the user answers. It uses the permission prompt's box
// and keys (↑/↓ or 1–3, enter; esc is no).
type trustModel struct {
	q      TrustQuestion
	st     styles
	width  int
	sel    int
	choice TrustChoice
}

func (m *trustModel) Init() tea.Cmd { return nil }

func (m *trustModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width = msg.Width
	case tea.KeyPressMsg:
		switch k := msg.String(); k {
		case "up", "k":
			m.sel = (m.sel + len(trustOptions) - 1) % len(trustOptions)
		case "down", "j", "tab":
			m.sel = (m.sel + 1) % len(trustOptions)
		case "1", "2", "3":
			m.sel = int(k[0] - '1')
			return m, m.answer()
		case "enter":
			return m, m.answer()
		case "esc", "ctrl+c", "n":
			m.sel = len(trustOptions) - 1
			return m, m.answer()
		}
	}
	return m, nil
}

func (m *trustModel) answer() tea.Cmd {
	m.choice = [...]TrustChoice{TrustAlways, TrustSession, TrustNo}[m.sel]
	return tea.Quit
}

func (m *trustModel) View() tea.View { return tea.NewView(m.text()) }

func (m *trustModel) text() string {
	inner := max(m.width-4, 20)
	var b strings.Builder
	b.WriteString(m.st.accent.Render("Do you trust the files in this folder?") + "\n")
	b.WriteString(ansi.Wrap("  "+m.q.Dir, inner, "/") + "\n")
	b.WriteString(m.st.dim.Render(ansi.Wrap("Until you trust it, what this folder provides can only narrow what keel does: its settings may add deny and ask rules but not allow rules, a mode or hooks; its MCP servers, hooks and skill shell lines do not run; its memory files include nothing outside it.", inner, " ")) + "\n")
	if len(m.q.Provides) > 0 {
		b.WriteString(m.st.dim.Render(ansi.Wrap("Found here: "+strings.Join(m.q.Provides, ", "), inner, " ")) + "\n")
	}
	for i, o := range trustOptions {
		l := fmt.Sprintf("  %d. %s", i+1, o)
		if i == m.sel {
			l = m.st.sel.Render(fmt.Sprintf("❯ %d. %s", i+1, o))
		}
		b.WriteString(ansi.Truncate(l, inner, "…"))
		if i < len(trustOptions)-1 {
			b.WriteString("\n")
		}
	}
	return m.st.box.Width(m.width).Render(b.String())
}

// AskTrust asks the first-run trust question in the terminal. An error or an interrupt
// answers TrustNo.
func AskTrust(ctx context.Context, q TrustQuestion, noColor bool, opts ...tea.ProgramOption) (TrustChoice, error) {
	m := &trustModel{q: q, st: newStyles(noColor), width: 80}
	p := tea.NewProgram(m, append([]tea.ProgramOption{tea.WithContext(ctx)}, opts...)...)
	if _, err := p.Run(); err != nil {
		return TrustNo, fmt.Errorf("ask whether to trust %s: %w", q.Dir, err)
	}
	return m.choice, nil
}
