package tui

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
)

// resumable is the sessions a picker offers: those with a conversation, other than the one
// running, most recent first.
func resumable(list []SessionInfo, current string) []SessionInfo {
	out := slices.DeleteFunc(slices.Clone(list), func(s SessionInfo) bool { return s.ID == current || s.Messages == 0 })
	slices.SortStableFunc(out, func(a, b SessionInfo) int { return b.Modified.Compare(a.Modified) })
	return out
}

// sessionPicker lists sessions as rows of title (or first prompt), age, branch and size, and
// searches their titles, first prompts, branches and ids.
func sessionPicker(list []SessionInfo, now time.Time, choose func(s SessionInfo) tea.Cmd) *picker {
	items := make([]string, len(list))
	for i, s := range list {
		branch := ""
		if s.Branch != "" {
			branch = "⎇ " + s.Branch
		}
		items[i] = fmt.Sprintf("%-40s %5s ago  %-16s %7s", cut(cmp.Or(s.Title, strings.Join(strings.Fields(s.FirstPrompt), " ")), 40),
			fmtAge(now.Sub(s.Modified)), cut(branch, 16), fmtSize(s.Size))
	}
	p := newPicker("Resume a session", items, 0, func(i int) tea.Cmd { return choose(list[i]) })
	p.search = func(i int, q string) bool {
		s := list[i]
		for _, f := range []string{s.Title, s.FirstPrompt, s.Branch, s.ID} {
			if strings.Contains(strings.ToLower(f), q) {
				return true
			}
		}
		return false
	}
	p.empty = "no session matches; esc to close"
	return p
}

func (m *Model) openResume() tea.Cmd {
	sl, ok1 := m.b.(SessionLister)
	r, ok2 := m.b.(Resumer)
	if !ok1 || !ok2 {
		m.notice(unavailable("/resume"))
		return nil
	}
	all, err := sl.ListSessions()
	if err != nil {
		m.errorf("could not list the sessions: " + err.Error())
		return nil
	}
	list := resumable(all, m.b.ID())
	if len(list) == 0 {
		m.notice("no earlier sessions in this directory")
		return nil
	}
	m.picker = sessionPicker(list, m.now(), func(s SessionInfo) tea.Cmd {
		m.hint = "opening " + cmp.Or(s.Title, cut(s.FirstPrompt, 40)) + "…"
		return func() tea.Msg {
			return cmdDoneMsg{what: "resumed " + cmp.Or(s.Title, s.ID), err: r.Resume(context.Background(), s.ID), resumed: true}
		}
	})
	return nil
}

// afterResume shows the conversation the backend switched to, with what was repaired.
func (m *Model) afterResume() {
	m.queued, m.pending, m.tasks = nil, nil, nil
	m.loadHistory()
	if n, ok := m.b.(Noticer); ok {
		for _, e := range n.Notices() {
			m.showNotice(e)
		}
	}
	m.refreshContext()
}

// pickModel is the stand-alone session picker `keel --resume` without an id opens.
type pickModel struct {
	p      *picker
	st     styles
	width  int
	height int
	chosen string
	closed bool
}

func (m *pickModel) Init() tea.Cmd { return nil }

func (m *pickModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case tea.KeyPressMsg:
		if done, chosen := m.p.key(msg); done {
			if chosen >= 0 {
				m.p.choose(chosen)
			}
			m.closed = true
			return m, tea.Quit
		}
	}
	return m, nil
}

func (m *pickModel) View() tea.View {
	if m.closed {
		return tea.NewView("")
	}
	return tea.NewView(m.st.box.Width(m.width).Render(pickerText(m.p, m.st, max(m.width-4, 20), max(m.height-6, 3))))
}

// PickSession asks the user which stored session to resume: the sessions of list with a
// conversation, other than current, most recent first, searchable by title, first prompt,
// branch and id. It returns the chosen id, or "" when the user closed the picker (or there
// was nothing to pick).
func PickSession(ctx context.Context, list []SessionInfo, current string, noColor bool, opts ...tea.ProgramOption) (string, error) {
	list = resumable(list, current)
	if len(list) == 0 {
		return "", nil
	}
	m := &pickModel{st: newStyles(noColor), width: 80, height: 24}
	m.p = sessionPicker(list, time.Now(), func(s SessionInfo) tea.Cmd { m.chosen = s.ID; return nil })
	p := tea.NewProgram(m, append([]tea.ProgramOption{tea.WithContext(ctx)}, opts...)...)
	if _, err := p.Run(); err != nil {
		return "", fmt.Errorf("pick a session to resume: %w", err)
	}
	return m.chosen, nil
}
