package tui

import (
	"image/color"

	"charm.land/lipgloss/v2"
)

// styles are the UI's colours; with NO_COLOR every style is plain (bold and faint stay, they
// are not colour).
type styles struct {
	noColor                                     bool
	user, dim, tool, ok, fail, add, del, accent lipgloss.Style
	warn, status, box, sel                      lipgloss.Style
}

func newStyles(noColor bool) styles {
	c := func(s string) color.Color {
		if noColor {
			return nil
		}
		return lipgloss.Color(s)
	}
	fg := func(s string) lipgloss.Style {
		st := lipgloss.NewStyle()
		if col := c(s); col != nil {
			st = st.Foreground(col)
		}
		return st
	}
	box := lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).Padding(0, 1)
	if col := c("#d7875f"); col != nil {
		box = box.BorderForeground(col)
	}
	return styles{
		noColor: noColor,
		user:    fg("#87afd7").Bold(true),
		dim:     fg("#8a8a8a").Faint(noColor),
		tool:    fg("#d7afff").Bold(true),
		ok:      fg("#5faf5f"),
		fail:    fg("#d75f5f"),
		add:     fg("#5faf5f"),
		del:     fg("#d75f5f"),
		accent:  fg("#d7875f").Bold(true),
		warn:    fg("#d7af5f"),
		status:  fg("#a8a8a8"),
		box:     box,
		sel:     fg("#d7875f").Bold(true),
	}
}

// agentColor maps an agent definition's colour name to a style.
func (s styles) agentColor(name string) lipgloss.Style {
	if s.noColor || name == "" {
		return lipgloss.NewStyle().Bold(true)
	}
	named := map[string]string{"red": "#d75f5f", "blue": "#5f87d7", "green": "#5faf5f", "yellow": "#d7af5f",
		"purple": "#af87d7", "orange": "#d7875f", "pink": "#d787af", "cyan": "#5fafaf"}
	if hex, ok := named[name]; ok {
		name = hex
	}
	return lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color(name))
}
