package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// picker is a list overlay: the resume picker, the rewind picker and its mode choice, the
// model, permissions and settings pickers. With search set, what the user types filters it.
type picker struct {
	title string
	items []string
	// sel is the position in shown; choose gets the index into items.
	sel    int
	choose func(i int) tea.Cmd
	// search says whether item i matches the lower-cased query; nil means no typing filter
	// (then j and k move too).
	search func(i int, q string) bool
	query  string
	shown  []int
	// empty is what the picker says when nothing matches.
	empty string
}

// newPicker builds a picker over items with the selection at sel.
func newPicker(title string, items []string, sel int, choose func(i int) tea.Cmd) *picker {
	p := &picker{title: title, items: items, choose: choose}
	p.filter()
	p.sel = min(max(sel, 0), max(len(p.shown)-1, 0))
	return p
}

// filter recomputes the items shown for the query.
func (p *picker) filter() {
	p.shown = p.shown[:0]
	q := strings.ToLower(strings.TrimSpace(p.query))
	for i := range p.items {
		if q == "" || p.search == nil || p.search(i, q) {
			p.shown = append(p.shown, i)
		}
	}
	p.sel = min(p.sel, max(len(p.shown)-1, 0))
}

func (m *Model) pickerKey(msg tea.KeyPressMsg) tea.Cmd {
	p := m.picker
	done, chosen := p.key(msg)
	if !done {
		return nil
	}
	m.picker = nil
	if chosen < 0 {
		return nil
	}
	return p.choose(chosen)
}

// key moves the selection, edits the search or ends the picker: done says it closed, chosen
// is the index into items picked (-1 when closed without a choice).
func (p *picker) key(msg tea.KeyPressMsg) (done bool, chosen int) {
	k := msg.String()
	n := max(len(p.shown), 1)
	switch k {
	case "up", "ctrl+p":
		p.sel = (p.sel + n - 1) % n
	case "down", "ctrl+n":
		p.sel = (p.sel + 1) % n
	case "esc", "ctrl+c":
		return true, -1
	case "enter":
		if len(p.shown) > 0 {
			return true, p.shown[p.sel]
		}
	case "backspace":
		if p.search != nil && p.query != "" {
			r := []rune(p.query)
			p.query = string(r[:len(r)-1])
			p.filter()
		}
	default:
		switch {
		case p.search != nil && msg.Text != "":
			p.query += msg.Text
			p.sel = 0
			p.filter()
		case k == "k":
			p.sel = (p.sel + n - 1) % n
		case k == "j":
			p.sel = (p.sel + 1) % n
		}
	}
	return false, -1
}

func (m *Model) pickerBox() string {
	return m.st.box.Width(m.width).Render(pickerText(m.picker, m.st, max(m.width-4, 20), m.hgt-8))
}

// pickerText draws a picker's title, search line and the window of items around the
// selection, at most rows of them.
func pickerText(p *picker, st styles, inner, rows int) string {
	var b strings.Builder
	keys := "  (↑/↓, enter, esc)"
	if p.search != nil {
		keys = "  (type to search · ↑/↓ · enter · esc)"
	}
	b.WriteString(st.accent.Render(p.title) + st.dim.Render(keys))
	if p.search != nil {
		b.WriteString("\n" + ansi.Truncate("Search: "+p.query+"▏", inner, "…"))
		rows--
	}
	if len(p.shown) == 0 {
		empty := p.empty
		if empty == "" {
			empty = "nothing matches"
		}
		b.WriteString("\n" + st.dim.Render("  "+empty))
		return b.String()
	}
	rows = max(min(len(p.shown), rows), 1)
	first := 0
	if p.sel >= rows {
		first = p.sel - rows + 1
	}
	for i := first; i < len(p.shown) && i < first+rows; i++ {
		l := "  " + p.items[p.shown[i]]
		if i == p.sel {
			l = st.sel.Render("❯ " + p.items[p.shown[i]])
		}
		b.WriteString("\n" + ansi.Truncate(l, inner, "…"))
	}
	if more := len(p.shown) - (first + rows); more > 0 {
		b.WriteString("\n" + st.dim.Render(fmt.Sprintf("  … %d more", more)))
	}
	return b.String()
}

func (m *Model) openRewind() {
	rw, ok := m.b.(Rewinder)
	if !ok {
		m.notice(unavailable("rewind"))
		return
	}
	if len(m.prompts) == 0 {
		m.notice("nothing to rewind to yet")
		return
	}
	items := make([]string, len(m.prompts))
	for i, p := range m.prompts {
		items[i] = cut(strings.ReplaceAll(p.text, "\n", " "), 70)
	}
	p := newPicker("Rewind to before which prompt?", items, len(items)-1, func(i int) tea.Cmd {
		p := m.prompts[i]
		m.picker = newPicker("Rewind what?", []string{"code and conversation", "conversation only", "code only"}, 0,
			func(j int) tea.Cmd {
				code, conv := j != 1, j != 2
				m.input.SetValue(p.text)
				return func() tea.Msg {
					return cmdDoneMsg{what: "rewound", err: rw.Rewind(context.Background(), p.uuid, code, conv), rewindTo: p.uuid, conv: conv}
				}
			})
		return nil
	})
	p.search = func(i int, q string) bool { return strings.Contains(strings.ToLower(m.prompts[i].text), q) }
	m.picker = p
}

func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func fmtAge(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "now"
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

func fmtSize(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%dB", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1fKB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1fMB", float64(n)/(1<<20))
}
