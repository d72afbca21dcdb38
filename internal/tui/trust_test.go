package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

func TestTrustPrompt(t *testing.T) {
	q := TrustQuestion{Dir: "/home/ada/project", Provides: []string{".claude/settings.json", ".mcp.json", "CLAUDE.md"}}
	m := trustQuestion(q, newStyles(true))
	m.width = 72
	var lines []string
	for _, l := range strings.Split(ansi.Strip(m.text()), "\n") {
		lines = append(lines, strings.TrimRight(l, " "))
	}
	golden(t, "trust", strings.Join(lines, "\n"))
	for _, l := range strings.Split(m.text(), "\n") {
		if w := ansi.StringWidth(l); w > 72 {
			t.Errorf("line %q is %d cells wide, more than 72", l, w)
		}
	}
	tests := []struct {
		keys []string
		want TrustChoice
	}{
		{[]string{"enter"}, TrustAlways},
		{[]string{"down", "enter"}, TrustSession},
		{[]string{"down", "down", "enter"}, TrustNo},
		{[]string{"up", "enter"}, TrustNo},
		{[]string{"2"}, TrustSession},
		{[]string{"1"}, TrustAlways},
		{[]string{"esc"}, TrustNo},
		{[]string{"ctrl+c"}, TrustNo},
	}
	for _, tt := range tests {
		m := trustQuestion(q, newStyles(true))
		var cmd tea.Cmd
		for _, k := range tt.keys {
			_, cmd = m.Update(press(k))
		}
		if cmd == nil {
			t.Errorf("%v: the prompt did not finish", tt.keys)
			continue
		}
		if _, ok := cmd().(tea.QuitMsg); !ok || trustChoices[m.sel] != tt.want {
			t.Errorf("%v: choice %d; want %d", tt.keys, trustChoices[m.sel], tt.want)
		}
	}
}
