package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/keel-dev/keel"
)

// picker is a list overlay: the resume picker, the rewind picker and its mode choice.
type picker struct {
	title  string
	items  []string
	sel    int
	choose func(i int) tea.Cmd
}

func (m *Model) openResume() tea.Cmd {
	sl, ok1 := m.b.(SessionLister)
	_, ok2 := m.b.(Resumer)
	if !ok1 || !ok2 {
		m.notice(unavailable("/resume"))
		return nil
	}
	list, err := sl.ListSessions()
	if err != nil {
		m.errorf("list sessions: " + err.Error())
		return nil
	}
	if len(list) == 0 {
		m.notice("no earlier sessions in this directory")
		return nil
	}
	now := m.now()
	items := make([]string, len(list))
	for i, s := range list {
		title := s.Title
		if title == "" {
			title = s.FirstPrompt
		}
		items[i] = fmt.Sprintf("%-32s %8s ago  %6s  %s", cut(title, 32), fmtAge(now.Sub(s.Modified)), fmtSize(s.Size), cut(s.FirstPrompt, 40))
	}
	m.picker = &picker{title: "Resume a session", items: items, choose: func(i int) tea.Cmd {
		id := list[i].ID
		r := m.b.(Resumer)
		return func() tea.Msg {
			return cmdDoneMsg{what: "resumed session " + id, err: r.Resume(context.Background(), id)}
		}
	}}
	return nil
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
	m.picker = &picker{title: "Rewind to before which prompt?", items: items, sel: len(items) - 1, choose: func(i int) tea.Cmd {
		p := m.prompts[i]
		m.picker = &picker{title: "Rewind what?", items: []string{"code and conversation", "conversation only", "code only"},
			choose: func(j int) tea.Cmd {
				code, conv := j != 1, j != 2
				m.input.SetValue(p.text)
				return func() tea.Msg {
					return cmdDoneMsg{what: "rewound", err: rw.Rewind(context.Background(), p.uuid, code, conv), rewindTo: p.uuid, conv: conv}
				}
			}}
		return nil
	}}
}

func (m *Model) pickerKey(k string) tea.Cmd {
	p := m.picker
	switch k {
	case "up", "ctrl+p", "k":
		p.sel = (p.sel + len(p.items) - 1) % len(p.items)
	case "down", "ctrl+n", "j":
		p.sel = (p.sel + 1) % len(p.items)
	case "esc", "ctrl+c":
		m.picker = nil
	case "enter":
		m.picker = nil
		return p.choose(p.sel)
	}
	return nil
}

// askKey handles a key while a permission prompt is open.
func (m *Model) askKey(k string) tea.Cmd {
	a := m.asks[0]
	answer := func(ans keel.PermissionAnswer) tea.Cmd {
		a.reply <- ans
		m.asks, m.askSel = m.asks[1:], 0
		if ans.Allow && ans.Always {
			m.always = append(m.always, a.req.Suggestions...)
			if err := persistRules(m.cwd, a.req.Suggestions); err != nil {
				m.errorf("save rule: " + err.Error())
			}
		}
		return nil
	}
	switch k {
	case "up", "k":
		m.askSel = (m.askSel + 2) % 3
	case "down", "j", "tab":
		m.askSel = (m.askSel + 1) % 3
	case "1", "y":
		return answer(keel.PermissionAnswer{Allow: true})
	case "2", "a":
		return answer(keel.PermissionAnswer{Allow: true, Always: true})
	case "3", "n":
		m.askSel = 2
		m.askReason = true
		m.input.Reset()
	case "esc":
		return answer(keel.PermissionAnswer{Reason: "the user denied this call"})
	case "enter":
		switch m.askSel {
		case 0:
			return answer(keel.PermissionAnswer{Allow: true})
		case 1:
			return answer(keel.PermissionAnswer{Allow: true, Always: true})
		}
		m.askReason = true
		m.input.Reset()
	}
	return nil
}

// denyWithReason answers the open ask with the text typed in the input.
func (m *Model) denyWithReason() {
	reason := strings.TrimSpace(m.input.Value())
	if reason == "" {
		reason = "the user denied this call"
	} else {
		reason = "the user denied this call: " + reason
	}
	m.asks[0].reply <- keel.PermissionAnswer{Reason: reason}
	m.asks, m.askSel, m.askReason = m.asks[1:], 0, false
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
