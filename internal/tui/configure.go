package tui

import (
	"context"
	"fmt"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/keel-dev/keel"
)

// The commands that change the session or the UI: /model, /permissions, /config, /theme, /vim
// and /statusline, with the pickers they open.

// lineAsk is a question answered by typing a line in the input (a rule to add): enter
// answers, esc drops it.
type lineAsk struct {
	label  string
	answer func(text string) tea.Cmd
}

// askLine puts a question in the input box.
func (m *Model) askLine(label string, answer func(string) tea.Cmd) {
	m.lineAsk = &lineAsk{label: label, answer: answer}
	m.input.Reset()
}

func (m *Model) cmdModel(arg string) tea.Cmd {
	ms, ok := m.b.(ModelSwitcher)
	if !ok {
		if arg == "" {
			m.notice("model: " + m.b.Model())
			return nil
		}
		m.b.SetModel(arg)
		m.notice("model set to " + m.b.Model())
		return nil
	}
	if arg != "" {
		return m.switchModel(ms, arg)
	}
	list := ms.Models()
	items := make([]string, len(list))
	sel := 0
	for i, mi := range list {
		mark := "  "
		if mi.ID == m.b.Model() {
			mark, sel = "● ", i
		}
		items[i] = fmt.Sprintf("%s%-34s %-20s %s", mark, mi.ID, strings.Join(mi.Aliases, ", "), fmtTokens(mi.ContextWindow))
	}
	p := newPicker("Model (now "+m.b.Model()+")", items, sel, func(i int) tea.Cmd { return m.switchModel(ms, list[i].ID) })
	p.search = func(i int, q string) bool {
		return strings.Contains(strings.ToLower(list[i].ID+" "+list[i].DisplayName+" "+strings.Join(list[i].Aliases, " ")), q)
	}
	m.picker = p
	return nil
}

func (m *Model) switchModel(ms ModelSwitcher, name string) tea.Cmd {
	return func() tea.Msg {
		err := ms.SwitchModel(context.Background(), name)
		return cmdDoneMsg{what: "model set to " + m.b.Model() + " from the next prompt", err: err}
	}
}

// behaviors are the kinds of permission rules, in the order the picker offers to add them.
var behaviors = []string{"allow", "ask", "deny"}

func (m *Model) cmdPermissions(string) tea.Cmd {
	re, ok := m.b.(RuleEditor)
	if !ok {
		text := "permission mode: " + string(m.b.PermissionMode()) + " (shift+tab cycles default → acceptEdits → plan)"
		if len(m.always) > 0 {
			text += "\nallowed this session:\n  " + strings.Join(m.always, "\n  ")
		}
		m.notice(text)
		return nil
	}
	rules := re.PermissionRules()
	slices.SortStableFunc(rules, func(a, b keel.PermissionRule) int {
		return slices.Index(behaviors, a.Behavior) - slices.Index(behaviors, b.Behavior)
	})
	items := []string{"+ add an allow rule", "+ add an ask rule", "+ add a deny rule"}
	for _, r := range rules {
		items = append(items, fmt.Sprintf("%-6s %-40s %s", r.Behavior, r.Rule, ruleSource(r)))
	}
	p := newPicker("Permission rules · mode "+string(m.b.PermissionMode())+" · enter adds or removes", items, 0, func(i int) tea.Cmd {
		if i < len(behaviors) {
			b := behaviors[i]
			m.askLine("New "+b+" rule, as settings write it: Bash(npm run test:*), Edit(./src/**), WebFetch(domain:go.dev)", func(rule string) tea.Cmd {
				return later("added the "+b+" rule "+rule+" (kept in .keel/settings.local.json)", func(context.Context) error { return re.AddPermissionRule(b, rule) })
			})
			return nil
		}
		r := rules[i-len(behaviors)]
		m.picker = newPicker("Remove the "+r.Behavior+" rule "+r.Rule+"?", []string{"Yes, remove it", "No"}, 1, func(j int) tea.Cmd {
			if j != 0 {
				return nil
			}
			return later("removed the "+r.Behavior+" rule "+r.Rule, func(context.Context) error { return re.RemovePermissionRule(r.Behavior, r.Rule) })
		})
		return nil
	})
	p.search = func(i int, q string) bool { return strings.Contains(strings.ToLower(items[i]), q) }
	m.picker = p
	return nil
}

func ruleSource(r keel.PermissionRule) string {
	if r.Path != "" {
		return r.Source + " " + r.Path
	}
	return r.Source
}

// cmdConfig opens the settings a person changes while working, each leading to its picker.
func (m *Model) cmdConfig(string) tea.Cmd {
	type entry struct {
		label string
		open  func() tea.Cmd
	}
	var entries []entry
	if ss, ok := m.b.(StyleSwitcher); ok {
		entries = append(entries, entry{"Output style      " + ss.OutputStyle(), func() tea.Cmd { return m.pickStyle(ss) }})
	}
	entries = append(entries,
		entry{"Theme             " + m.st.theme, func() tea.Cmd { return m.cmdTheme("") }},
		entry{"Editor mode       " + m.editorMode(), func() tea.Cmd { return m.cmdVim("") }},
		entry{"Model             " + m.b.Model(), func() tea.Cmd { return m.cmdModel("") }},
		entry{"Permission mode   " + string(m.b.PermissionMode()), func() tea.Cmd { return m.pickMode() }},
		entry{"Permission rules", func() tea.Cmd { return m.cmdPermissions("") }},
	)
	if sl, ok := m.b.(StatusLiner); ok {
		entries = append(entries, entry{"Status line       " + statusLineText(m.sl.command(sl)), func() tea.Cmd { return m.cmdStatusLine("") }})
	}
	items := make([]string, len(entries))
	for i, e := range entries {
		items[i] = e.label
	}
	m.picker = newPicker("Configuration", items, 0, func(i int) tea.Cmd { return entries[i].open() })
	return nil
}

func statusLineText(cmd string) string {
	if cmd == "" {
		return "off"
	}
	return cut(cmd, 40)
}

func (m *Model) pickStyle(ss StyleSwitcher) tea.Cmd {
	styles := ss.OutputStyles()
	items := []string{fmt.Sprintf("%-14s %s", "default", "keel's own: short answers, focused on the task")}
	names := []string{"default"}
	sel := 0
	for _, s := range styles {
		if strings.EqualFold(s.Name, ss.OutputStyle()) {
			sel = len(items)
		}
		items = append(items, fmt.Sprintf("%-14s %s", s.Name, s.Description))
		names = append(names, s.Name)
	}
	m.picker = newPicker("Output style (kept in .keel/settings.local.json)", items, sel, func(i int) tea.Cmd {
		return later("output style "+names[i]+" from the next prompt", func(ctx context.Context) error { return ss.SetOutputStyle(ctx, names[i]) })
	})
	return nil
}

func (m *Model) cmdOutputStyle(arg string) tea.Cmd {
	ss, ok := m.b.(StyleSwitcher)
	switch {
	case !ok:
		m.notice(unavailable("/output-style"))
		return nil
	case arg == "":
		return m.pickStyle(ss)
	}
	return later("output style "+arg+" from the next prompt", func(ctx context.Context) error { return ss.SetOutputStyle(ctx, arg) })
}

func (m *Model) pickMode() tea.Cmd {
	modes := []keel.PermissionMode{keel.ModeDefault, keel.ModeAcceptEdits, keel.ModePlan, keel.ModeBypassPermissions}
	names := make([]string, len(modes))
	for i, mode := range modes {
		names[i] = string(mode)
	}
	m.picker = newPicker("Permission mode", names, slices.Index(modes, m.b.PermissionMode()), func(i int) tea.Cmd {
		if err := m.b.SetPermissionMode(modes[i]); err != nil {
			m.errorf("could not switch the permission mode: " + err.Error())
		}
		return nil
	})
	return nil
}

func (m *Model) cmdTheme(arg string) tea.Cmd {
	if arg != "" {
		m.setTheme(arg)
		return nil
	}
	m.picker = newPicker("Theme", Themes, max(slices.Index(Themes, m.st.theme), 0), func(i int) tea.Cmd {
		m.setTheme(Themes[i])
		return nil
	})
	return nil
}

// setTheme restyles the UI and remembers the choice.
func (m *Model) setTheme(theme string) {
	if !slices.Contains(Themes, theme) {
		m.errorf(fmt.Sprintf("no theme %q; the themes are %s", theme, strings.Join(Themes, ", ")))
		return
	}
	m.st = themeStyles(theme, m.cfg.NoColor)
	m.md.style = m.st.glamourStyle()
	for _, it := range m.items {
		it.cache = ""
	}
	m.prefs.Theme = theme
	m.savePrefs()
	m.notice("theme " + theme)
}

func (m *Model) savePrefs() {
	if err := savePrefs(m.cfg.PrefsPath, m.prefs); err != nil {
		m.errorf(err.Error())
	}
}

func (m *Model) cmdStatusLine(arg string) tea.Cmd {
	sl, ok := m.b.(StatusLiner)
	if !ok {
		m.notice(unavailable("/statusline"))
		return nil
	}
	switch arg {
	case "":
		cur := m.sl.command(sl)
		if cur == "" {
			m.notice("No status line. /statusline COMMAND sets one: keel runs COMMAND with the session's state as JSON on stdin " +
				"(model, cwd, cost, context, session id, output style: Claude Code's shape) and shows its first line, e.g.\n" +
				`  /statusline jq -r '"\(.model.display_name) · \(.context_window.used_percentage)% context"'`)
			return nil
		}
		m.notice("Status line: " + cur + "\nlast output: " + m.sl.out + "\n/statusline off removes it")
		return nil
	case "off":
		arg = ""
	}
	if err := sl.SetStatusLine(arg); err != nil {
		m.errorf("could not set the status line: " + err.Error())
		return nil
	}
	m.sl.override, m.sl.set, m.sl.out = arg, true, ""
	if arg == "" {
		m.notice("status line removed (from your user settings)")
		return nil
	}
	m.notice("status line set (in your user settings): " + arg)
	return m.refreshStatusLine()
}
