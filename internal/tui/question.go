package tui

import (
	"context"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// question is a one-question program asked before the session opens (the trust question, the
// bypassPermissions warning), in the permission prompt's box and keys: ↑/↓ or a number,
// enter; esc and ctrl+c choose the last option, which must be the safe one.
type question struct {
	title string
	// lead is shown under the title as it is (a path); notes are wrapped and dimmed.
	lead    string
	notes   []string
	options []string
	st      styles
	width   int
	sel     int
}

func (m *question) Init() tea.Cmd { return nil }

func (m *question) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width = msg.Width
	case tea.KeyPressMsg:
		n := len(m.options)
		switch k := msg.String(); k {
		case "up", "k":
			m.sel = (m.sel + n - 1) % n
		case "down", "j", "tab":
			m.sel = (m.sel + 1) % n
		case "enter":
			return m, tea.Quit
		case "esc", "ctrl+c", "n":
			m.sel = n - 1
			return m, tea.Quit
		default:
			if len(k) == 1 && k[0] >= '1' && int(k[0]-'1') < n {
				m.sel = int(k[0] - '1')
				return m, tea.Quit
			}
		}
	}
	return m, nil
}

func (m *question) View() tea.View { return tea.NewView(m.text()) }

func (m *question) text() string {
	inner := max(m.width-4, 20)
	var b strings.Builder
	b.WriteString(m.st.accent.Render(m.title) + "\n")
	if m.lead != "" {
		b.WriteString(ansi.Wrap("  "+m.lead, inner, "/") + "\n")
	}
	for _, n := range m.notes {
		b.WriteString(m.st.dim.Render(ansi.Wrap(n, inner, " ")) + "\n")
	}
	for i, o := range m.options {
		l := fmt.Sprintf("  %d. %s", i+1, o)
		if i == m.sel {
			l = m.st.sel.Render(fmt.Sprintf("❯ %d. %s", i+1, o))
		}
		b.WriteString(ansi.Truncate(l, inner, "…"))
		if i < len(m.options)-1 {
			b.WriteString("\n")
		}
	}
	return m.st.box.Width(m.width).Render(b.String())
}

// ask runs the question in the terminal and returns the index of the option chosen.
func (m *question) ask(ctx context.Context, opts ...tea.ProgramOption) (int, error) {
	p := tea.NewProgram(m, append([]tea.ProgramOption{tea.WithContext(ctx)}, opts...)...)
	if _, err := p.Run(); err != nil {
		return len(m.options) - 1, err
	}
	return m.sel, nil
}

// ConfirmBypass warns that bypassPermissions mode runs every tool call without asking and
// asks whether to go on; an error or an interrupt is no.
func ConfirmBypass(ctx context.Context, noColor bool, opts ...tea.ProgramOption) (bool, error) {
	q := &question{
		title: "keel is starting in bypassPermissions mode",
		notes: []string{
			"Every tool call runs without asking: commands, edits and network access included, limited only by deny rules and the sandbox. " +
				"Use it in a container or a VM you can throw away, not on a machine holding anything you would miss.",
			"You are asked once; your answer is remembered.",
		},
		options: []string{"Yes, I accept", "No, exit (esc)"},
		st:      newStyles(noColor), width: 80,
	}
	i, err := q.ask(ctx, opts...)
	if err != nil {
		return false, fmt.Errorf("confirm bypassPermissions mode: %w", err)
	}
	return i == 0, nil
}
