package tui

import (
	"image/color"

	"charm.land/lipgloss/v2"
)

// Themes are the colour themes /theme offers: for a dark terminal, for a light one, and
// without colour (as NO_COLOR gives).
var Themes = []string{"dark", "light", "mono"}

// palette is a theme's colours by role.
type palette struct {
	user, dim, tool, ok, fail, accent, warn, status string
}

var palettes = map[string]palette{
	"dark":  {user: "#87afd7", dim: "#8a8a8a", tool: "#d7afff", ok: "#5faf5f", fail: "#d75f5f", accent: "#d7875f", warn: "#d7af5f", status: "#a8a8a8"},
	"light": {user: "#005f87", dim: "#6c6c6c", tool: "#5f00af", ok: "#005f00", fail: "#af0000", accent: "#af5f00", warn: "#875f00", status: "#4e4e4e"},
}

// styles are the UI's colours; with NO_COLOR (or the mono theme) every style is plain (bold
// and faint stay, they are not colour).
type styles struct {
	theme                                       string
	noColor                                     bool
	user, dim, tool, ok, fail, add, del, accent lipgloss.Style
	warn, status, box, sel                      lipgloss.Style
}

func newStyles(noColor bool) styles { return themeStyles("dark", noColor) }

// themeStyles are the styles of a theme; an unknown theme is dark.
func themeStyles(theme string, noColor bool) styles {
	pal, ok := palettes[theme]
	if theme == "mono" {
		noColor = true
	} else if !ok {
		theme, pal = "dark", palettes["dark"]
	}
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
	if col := c(pal.accent); col != nil {
		box = box.BorderForeground(col)
	}
	return styles{
		theme:   theme,
		noColor: noColor,
		user:    fg(pal.user).Bold(true),
		dim:     fg(pal.dim).Faint(noColor),
		tool:    fg(pal.tool).Bold(true),
		ok:      fg(pal.ok),
		fail:    fg(pal.fail),
		add:     fg(pal.ok),
		del:     fg(pal.fail),
		accent:  fg(pal.accent).Bold(true),
		warn:    fg(pal.warn),
		status:  fg(pal.status),
		box:     box,
		sel:     fg(pal.accent).Bold(true),
	}
}

// glamourStyle is the Markdown style of the theme.
func (s styles) glamourStyle() string {
	if s.theme == "light" {
		return "light"
	}
	return "dark"
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
