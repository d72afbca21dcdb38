package tui

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// formBox draws the open form: who asks and why, the fields (a window around the focused
// one when they do not fit), the buttons and the keys.
func (m *Model) formBox() string {
	f := m.forms[0]
	inner := max(m.width-4, 20)
	var head []string
	head = append(head, m.st.accent.Render(f.server)+m.st.dim.Render(" (MCP server) asks"))
	if msg := strings.TrimSpace(f.p.Message); msg != "" {
		lines := strings.Split(ansi.Wrap(msg, inner, " "), "\n")
		// A long message must leave room for the fields.
		if keep := max(m.hgt/3, 2); len(lines) > keep {
			lines = append(lines[:keep-1], ansi.Truncate(lines[keep-1], inner-1, "")+"…")
		}
		head = append(head, lines...)
	}
	if f.url {
		head = append(head, "")
		head = append(head, strings.Split(ansi.Hardwrap("  "+f.p.URL, inner, false), "\n")...)
		if m.cfg.OpenURL != nil {
			head = append(head, m.st.dim.Render("Open opens it in your browser; the server goes on when you are done there."))
		} else {
			head = append(head, m.st.dim.Render("Open it in your browser ($BROWSER is not set); the server goes on when you are done there."))
		}
	}

	// rows of each field, so a window can keep the focused one in view
	var rows [][]string
	lw := labelWidth(f.fields)
	for i, fl := range f.fields {
		rows = append(rows, m.fieldRows(fl, i == f.focus, lw, inner))
	}

	var tail []string
	labels := []string{"Accept", "Decline", "Cancel"}
	if f.url {
		labels[0] = "Open"
	}
	var bs []string
	for i, l := range labels {
		if f.focus == len(f.fields)+i {
			bs = append(bs, m.st.sel.Render("[ "+l+" ]"))
		} else {
			bs = append(bs, "  "+l+"  ")
		}
	}
	tail = append(tail, "", strings.Join(bs, " "))
	if f.err != "" {
		tail = append(tail, m.st.fail.Render(ansi.Truncate("✗ "+f.err, inner, "…")))
	}
	help := "tab/↑↓ move · enter next · esc cancel"
	if len(f.fields) > 0 {
		help = "tab/↑↓ move · ←/→ choose · space toggle · enter next · esc cancel"
	}
	tail = append(tail, m.st.dim.Render(ansi.Truncate(help, inner, "…")))

	// The box has a border line above and below; keep a few transcript lines visible.
	budget := max(m.hgt-6-len(head)-len(tail), 3)
	body := fieldWindow(rows, min(f.focus, len(f.fields)-1), budget)
	if len(body) > 0 {
		body = append([]string{""}, body...)
	}
	lines := append(append(head, body...), tail...)
	return m.st.box.Width(m.width).Render(strings.Join(lines, "\n"))
}

// fieldWindow joins the rows of consecutive fields around focus into at most budget lines.
func fieldWindow(rows [][]string, focus, budget int) []string {
	total := 0
	for _, r := range rows {
		total += len(r)
	}
	if total <= budget || focus < 0 {
		var out []string
		for _, r := range rows {
			out = append(out, r...)
		}
		return out
	}
	first, last := focus, focus
	n := len(rows[focus])
	for {
		grew := false
		if last+1 < len(rows) && n+len(rows[last+1]) <= budget {
			last++
			n += len(rows[last])
			grew = true
		}
		if first > 0 && n+len(rows[first-1]) <= budget {
			first--
			n += len(rows[first])
			grew = true
		}
		if !grew {
			break
		}
	}
	var out []string
	for _, r := range rows[first : last+1] {
		out = append(out, r...)
	}
	if len(out) > budget {
		out = out[:budget]
	}
	return out
}

// fieldRows draws one field: its label and control, then its description and its error.
func (m *Model) fieldRows(fl *formField, focused bool, lw, inner int) []string {
	mark := "  "
	if focused {
		mark = m.st.sel.Render("❯ ")
	}
	label := ansi.Truncate(fieldLabel(fl), lw, "…")
	label += strings.Repeat(" ", lw-ansi.StringWidth(label))
	if focused {
		label = m.st.sel.Render(label)
	}
	// The text inputs leave room for the brackets and the cursor past the end.
	cw := min(max(inner-lw-7, 6), 48)
	var control string
	switch fl.kind {
	case fieldBool:
		control = "[ ]"
		if fl.checked {
			control = "[x]"
		}
		if focused {
			control += m.st.dim.Render("  space toggles")
		}
	case fieldEnum:
		choice := m.st.dim.Render("choose")
		if fl.choice >= 0 {
			choice = fl.options[fl.choice].label
		}
		control = "‹ " + choice + " ›"
		if focused {
			control += m.st.dim.Render("  ←/→")
		}
	case fieldMulti:
		var parts []string
		for i, o := range fl.options {
			box := "[ ] "
			if fl.picked[i] {
				box = "[x] "
			}
			p := box + o.label
			if focused && i == fl.cursor {
				p = m.st.sel.Render("›" + p)
			} else {
				p = " " + p
			}
			parts = append(parts, p)
		}
		control = strings.Join(parts, " ")
	default:
		fl.input.SetWidth(cw)
		control = "[" + fl.input.View() + "]"
	}
	rows := []string{ansi.Truncate(mark+label+"  "+control, inner, "…")}
	if fl.desc != "" {
		for _, l := range strings.Split(ansi.Wrap(fl.desc, max(inner-4, 10), " "), "\n") {
			rows = append(rows, m.st.dim.Render("    "+l))
		}
	}
	if fl.err != "" {
		rows = append(rows, m.st.fail.Render(ansi.Truncate("    ✗ "+fl.err, inner, "…")))
	}
	return rows
}
