package tui

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/keel-dev/keel"
)

// The commands that show what the session is made of: /status, /context, /doctor, /hooks,
// /skills, /todos, /bashes.

func (m *Model) cmdStatus(string) tea.Cmd {
	var b strings.Builder
	row := func(k, v string) { fmt.Fprintf(&b, "\n  %-16s %s", k, v) }
	b.WriteString("Status")
	row("version", fmt.Sprintf("keel %s (%s, %s/%s)", cmp.Or(m.cfg.Version, "dev"), runtime.Version(), runtime.GOOS, runtime.GOARCH))
	row("session", m.b.ID())
	row("directory", m.cwd)
	row("model", m.b.Model())
	row("permission mode", string(m.b.PermissionMode()))
	if ss, ok := m.b.(StyleSwitcher); ok {
		row("output style", ss.OutputStyle())
	}
	if sr, ok := m.b.(SettingsReporter); ok {
		var loaded []string
		for _, f := range sr.SettingsFiles() {
			if f.State == "loaded" {
				loaded = append(loaded, f.Path+" ("+f.Scope+")")
			}
		}
		row("settings", cmp.Or(strings.Join(loaded, "\n                   "), "none"))
		if n := len(sr.SettingsProblems()); n > 0 {
			row("problems", fmt.Sprintf("%d (/doctor lists them)", n))
		}
	}
	if ml, ok := m.b.(MemoryLister); ok {
		row("memory files", fmt.Sprint(len(ml.MemoryFiles())))
	}
	if ms, ok := m.b.(MCPStatuser); ok {
		connected := 0
		for _, s := range ms.MCPServers() {
			if strings.HasPrefix(s.Status, "connected") {
				connected++
			}
		}
		row("MCP servers", fmt.Sprintf("%d connected of %d", connected, len(ms.MCPServers())))
	}
	row("context", fmt.Sprintf("%s of %s tokens (%d%%)", fmtTokens(m.ctxUsed), fmtTokens(m.window), m.ctxUsed*100/max(m.window, 1)))
	row("cost", m.costString(4))
	m.notice(b.String())
	return nil
}

func (m *Model) cmdContext(string) tea.Cmd {
	cr, ok := m.b.(ContextReporter)
	if !ok {
		m.notice(unavailable("/context"))
		return nil
	}
	m.notice(contextText(cr.ContextUsage(context.Background())))
	return nil
}

// contextText lists what fills the context window: each part's tokens, its share of the
// window and a bar.
func contextText(cu keel.ContextUsage) string {
	var b strings.Builder
	used := cu.Used()
	fmt.Fprintf(&b, "Context · %s · %s of %s tokens (%d%%)", cu.Model, fmtTokens(used), fmtTokens(cu.Window), used*100/max(cu.Window, 1))
	for _, p := range cu.Parts {
		share := float64(p.Tokens) * 100 / float64(max(cu.Window, 1))
		bar := strings.Repeat("█", int(share/5+0.5))
		if p.Kind != "used" {
			bar = strings.Repeat("░", int(share/5+0.5))
		}
		fmt.Fprintf(&b, "\n  %-20s %8s  %5.1f%%  %s", p.Name, fmtTokens(p.Tokens), share, bar)
	}
	b.WriteString("\n  (estimated from sizes; /compact frees the messages' share)")
	return b.String()
}

func (m *Model) cmdDoctor(string) tea.Cmd {
	d, ok := m.b.(Doctorer)
	if !ok {
		m.notice(unavailable("/doctor"))
		return nil
	}
	m.hint = "checking…"
	version := cmp.Or(m.cfg.Version, "dev")
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		checks := append([]keel.Check{{Area: "versions", Name: "keel", Status: "ok", Detail: version}}, d.Doctor(ctx)...)
		return noticeMsg{text: doctorText(checks)}
	}
}

// doctorText lists the checks by area, each marked ✓, ⚠, ✗ (or · for what is only reported),
// the failures counted first.
func doctorText(checks []keel.Check) string {
	fails, warns := 0, 0
	for _, c := range checks {
		switch c.Status {
		case "fail":
			fails++
		case "warn":
			warns++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Doctor · %d problems, %d warnings", fails, warns)
	area := ""
	for _, c := range checks {
		if c.Area != area {
			area = c.Area
			b.WriteString("\n" + area)
		}
		mark := map[string]string{"ok": "✓", "warn": "⚠", "fail": "✗", "info": "·"}[c.Status]
		fmt.Fprintf(&b, "\n  %s %s: %s", mark, c.Name, c.Detail)
	}
	return b.String()
}

func (m *Model) cmdHooks(string) tea.Cmd {
	hl, ok := m.b.(HookLister)
	if !ok {
		m.notice(unavailable("/hooks"))
		return nil
	}
	hooks := hl.Hooks()
	if len(hooks) == 0 {
		m.notice("No hooks configured. Hooks go in the \"hooks\" key of a settings file (.keel/settings.json, .claude/settings.json or $KEEL_HOME/settings.json).")
		return nil
	}
	var b strings.Builder
	b.WriteString("Hooks")
	event := ""
	for _, h := range hooks {
		if h.Event != event {
			event = h.Event
			b.WriteString("\n  " + event)
		}
		what := h.Command
		if h.Type != "command" {
			what = h.Type + " " + what
		}
		matcher := ""
		if h.Matcher != "" {
			matcher = "[" + h.Matcher + "] "
		}
		fmt.Fprintf(&b, "\n    %s%s  (%s)", matcher, what, h.Source)
	}
	b.WriteString("\n  Edit them in the settings files named; they apply to the next session.")
	m.notice(b.String())
	return nil
}

func (m *Model) cmdSkills(arg string) tea.Cmd {
	sl, ok := m.b.(SkillLister)
	if !ok {
		m.notice(unavailable("/skills"))
		return nil
	}
	if arg == "reload" {
		r, ok := m.b.(SkillReloader)
		if !ok {
			m.notice(unavailable("/skills reload"))
			return nil
		}
		return later("read the skills again", r.ReloadSkills)
	}
	var skills []keel.SkillInfo
	for _, s := range sl.Skills() {
		if s.UserInvocable {
			skills = append(skills, s)
		}
	}
	if len(skills) == 0 {
		m.notice("No skills. A skill is a folder with a SKILL.md in .keel/skills, .claude/skills or $KEEL_HOME/skills.")
		return nil
	}
	var b strings.Builder
	b.WriteString("Skills (run one with /NAME)")
	for _, s := range skills {
		fmt.Fprintf(&b, "\n  /%-18s %s", s.Name, s.Description)
	}
	m.notice(b.String())
	return nil
}

func (m *Model) cmdTodos(string) tea.Cmd {
	tl, ok := m.b.(TodoLister)
	if !ok {
		m.notice(unavailable("/todos"))
		return nil
	}
	todos := tl.Todos()
	if len(todos) == 0 {
		m.notice("No todos yet: the agent keeps a list with TodoWrite when a task has several steps.")
		return nil
	}
	m.notice(todosText(keel.Todos{Items: todos}))
	return nil
}

func (m *Model) cmdBashes(string) tea.Cmd {
	sl, ok := m.b.(ShellLister)
	if !ok {
		m.notice(unavailable("/bashes"))
		return nil
	}
	shells := sl.Shells()
	if len(shells) == 0 {
		m.notice("No background shells. The agent starts one with Bash and run_in_background.")
		return nil
	}
	items := make([]string, len(shells))
	for i, s := range shells {
		state := s.Status
		if s.Status != "running" {
			state += fmt.Sprintf(" (exit %d)", s.ExitCode)
		}
		items[i] = fmt.Sprintf("%-8s %-18s %6s  %s", s.ID, state, fmtAge(m.now().Sub(s.Started)), s.Command)
	}
	m.picker = newPicker("Background shells: enter stops one", items, 0, func(i int) tea.Cmd {
		s := shells[i]
		if s.Status != "running" {
			m.notice(s.ID + " has already ended")
			return nil
		}
		return later("stopped "+s.ID, func(context.Context) error { return sl.KillShell(s.ID) })
	})
	return nil
}
