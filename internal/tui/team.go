package tui

import (
	"context"
	"fmt"
	"iter"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/keel-dev/keel"
)

// The team view: a panel of the members (colour, state, task) under the transcript; a
// teammate's own transcript (/team NAME), where what the user types goes to that teammate as
// a message; the board (/tasks); and the lead woken for teammates' messages when it is idle.

// teammate is one member as the UI follows it from its events.
type teammate struct {
	name, color, state, task string
	items                    []*item
	tools                    map[string]*item
}

type teamState struct {
	order []*teammate
	byID  map[string]*teammate
	// focus is the teammate whose transcript is shown; nil shows the lead's.
	focus *teammate
}

// idleEventMsg is an event of the team's work between the lead's turns.
type idleEventMsg struct{ ev keel.Event }

func (m *Model) teamer() (Teamer, bool) {
	t, ok := m.b.(Teamer)
	if !ok || t.TeamName() == "" {
		return nil, false
	}
	return t, true
}

// watchTeam routes the events of work between turns (the team's, background agents') into
// the program.
func (m *Model) watchTeam(p *tea.Program) {
	if t, ok := m.teamer(); ok {
		t.OnIdleEvents(func(e keel.Event) { p.Send(idleEventMsg{e}) })
	} else if r, ok := m.b.(Reporter); ok {
		r.OnIdleEvents(func(e keel.Event) { p.Send(idleEventMsg{e}) })
	}
}

// mate returns the teammate an event comes from, or nil for the lead and subagents.
func (m *Model) mate(o keel.Origin) *teammate {
	if o.AgentID == "" || m.team.byID == nil {
		return nil
	}
	return m.team.byID[o.AgentID]
}

// onTeamEvent handles team events and teammates' events; false leaves the event to the
// lead's transcript.
func (m *Model) onTeamEvent(ev keel.Event) bool {
	o := ev.From()
	switch e := ev.(type) {
	case keel.TeammateState:
		tm := m.mate(o)
		if tm == nil {
			if m.team.byID == nil {
				m.team.byID = map[string]*teammate{}
			}
			tm = &teammate{name: e.Name, tools: map[string]*item{}}
			m.team.byID[o.AgentID] = tm
			m.team.order = append(m.team.order, tm)
		}
		tm.color, tm.state, tm.task = e.Color, e.State, e.Task
		return true
	case keel.TeamMessage:
		line := fmt.Sprintf("✉ %s → %s: %s", e.Sender, e.Recipient, summaryOf(e))
		for _, tm := range m.team.order {
			if tm.name == e.Sender || tm.name == e.Recipient {
				tm.items = append(tm.items, &item{kind: kindNotice, text: line})
			}
		}
		if e.Recipient == "team-lead" || e.Sender == "user" {
			m.notice(line)
		}
		return true
	}
	tm := m.mate(o)
	if tm == nil {
		return false
	}
	switch e := ev.(type) {
	case keel.AssistantMessage:
		if t := e.Message.TextOf(); t != "" {
			tm.items = append(tm.items, &item{kind: kindAssistant, text: t})
		}
	case keel.UserMessage:
		if t := promptText(e); t != "" && !hasToolResult(e) {
			tm.items = append(tm.items, &item{kind: kindUser, text: t})
		}
	case keel.ToolStart:
		it := &item{kind: kindTool, id: e.ID, name: e.Name, input: e.Input}
		tm.tools[e.ID] = it
		tm.items = append(tm.items, it)
	case keel.ToolEnd:
		if it := tm.tools[e.ID]; it != nil {
			it.done, it.isErr, it.dur, it.cache = true, e.IsError, e.Duration, ""
			it.result = toolEndText(e)
		}
	case keel.PermissionDenied:
		if it := tm.tools[e.ToolUseID]; it != nil {
			it.done, it.isErr, it.result, it.cache = true, true, "denied: "+e.Reason, ""
		}
	case keel.Notice:
		tm.items = append(tm.items, &item{kind: kindNotice, text: e.Text})
	}
	return true
}

func summaryOf(e keel.TeamMessage) string {
	if e.Summary != "" {
		return e.Summary
	}
	if e.Text != "" {
		return firstLineOf(e.Text)
	}
	return e.Type
}

// onIdleEvent folds an event that arrived between turns, and wakes the lead when a teammate
// wrote to it.
func (m *Model) onIdleEvent(ev keel.Event) tea.Cmd {
	if !m.onTeamEvent(ev) {
		m.onEvent(ev)
	}
	if msg, ok := ev.(keel.TeamMessage); ok && msg.Recipient == "team-lead" && !m.working {
		return m.wakeLead()
	}
	if _, ok := ev.(keel.TaskNotification); ok && !m.working { // the main agent's, if its reports wait
		return m.wakeLead()
	}
	return nil
}

// wakeLead gives the main agent (the team's lead) a turn for what waits for it: teammates'
// messages, background agents' reports.
func (m *Model) wakeLead() tea.Cmd {
	if m.working {
		return nil
	}
	ctx := context.Background()
	if t, ok := m.teamer(); ok && t.TeamUnread(ctx) > 0 {
		m.addItem(&item{kind: kindNotice, text: "teammates wrote to the lead; it reads their messages"})
		return m.startRun(t.SendPending)
	}
	if r, ok := m.b.(Reporter); ok && r.PendingReports() > 0 {
		m.addItem(&item{kind: kindNotice, text: "a background agent reported; the agent reads its report"})
		return m.startRun(r.SendPending)
	}
	return nil
}

// teamCommand is /team [NAME|lead] and /msg NAME TEXT.
func (m *Model) teamCommand(name, arg string) tea.Cmd {
	t, ok := m.teamer()
	if !ok {
		m.notice("agent teams are off in this session: set \"teams\": true in settings or CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1")
		return nil
	}
	ctx := context.Background()
	switch name {
	case "/tasks":
		m.notice(boardText(t.TeamTasks(ctx)))
	case "/msg":
		to, text, _ := strings.Cut(arg, " ")
		if to == "" || strings.TrimSpace(text) == "" {
			m.notice("usage: /msg NAME MESSAGE (NAME may be * for every teammate)")
			return nil
		}
		m.messageTeammate(to, strings.TrimSpace(text))
	default: // /team
		switch arg {
		case "":
			m.notice(membersText(t.TeamName(), t.TeamMembers(ctx)) + "\n\n" + boardText(t.TeamTasks(ctx)))
		case "lead", "team-lead":
			m.team.focus = nil
			m.scroll = 0
		default:
			for _, tm := range m.team.order {
				if tm.name == arg {
					m.team.focus, m.scroll = tm, 0
					return nil
				}
			}
			m.notice(fmt.Sprintf("no teammate %q; /team lists the team", arg))
		}
	}
	return nil
}

func (m *Model) messageTeammate(to, text string) {
	t, _ := m.teamer()
	if err := t.MessageTeammate(context.Background(), to, text); err != nil {
		m.errorf("message " + to + ": " + err.Error())
		return
	}
	if m.team.focus != nil && m.team.focus.name == to {
		m.team.focus.items = append(m.team.focus.items, &item{kind: kindUser, text: text})
	}
}

func membersText(team string, ms []TeamMember) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Team %s", team)
	for _, mb := range ms {
		fmt.Fprintf(&b, "\n  %s (%s) · %s", mb.Name, orDash(mb.Color), mb.State)
		if mb.Task != "" {
			fmt.Fprintf(&b, " · task #%s", mb.Task)
		}
		if mb.Runner != "" && mb.Runner != "lead" {
			fmt.Fprintf(&b, " · %s", mb.Runner)
		}
	}
	b.WriteString("\n/team NAME shows a teammate's work (what you type there goes to it); /team lead comes back; /msg NAME TEXT writes to one")
	return b.String()
}

func boardText(ts []TeamTask) string {
	if len(ts) == 0 {
		return "Task board: empty"
	}
	var b strings.Builder
	b.WriteString("Task board")
	for _, tk := range ts {
		mark := map[string]string{"completed": "☒", "in_progress": "◐"}[tk.Status]
		if mark == "" {
			mark = "☐"
		}
		fmt.Fprintf(&b, "\n  %s #%s %s", mark, tk.ID, tk.Subject)
		if tk.Owner != "" {
			fmt.Fprintf(&b, " (%s)", tk.Owner)
		}
		if len(tk.BlockedBy) > 0 && tk.Status != "completed" {
			fmt.Fprintf(&b, " · after #%s", strings.Join(tk.BlockedBy, ", #"))
		}
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// teamPanel shows the teammates under the transcript.
func (m *Model) teamPanel() string {
	if len(m.team.order) == 0 {
		return ""
	}
	var lines []string
	for _, tm := range m.team.order {
		mark := map[string]string{"working": "◐", "idle": "○", "stopped": "■", "dead": "✗"}[tm.state]
		if mark == "" {
			mark = "·"
		}
		l := m.st.agentColor(tm.color).Render(mark+" "+tm.name) + m.st.dim.Render(" · "+tm.state)
		if tm.task != "" {
			l += m.st.dim.Render(" · task #" + tm.task)
		}
		if tm == m.team.focus {
			l += m.st.accent.Render(" ← viewing")
		}
		lines = append(lines, ansi.Truncate(l, m.width, "…"))
	}
	return m.st.dim.Render("Team (/team)") + "\n" + strings.Join(lines, "\n")
}

// focusLines is the transcript of the teammate in view.
func (m *Model) focusLines() []string {
	tm := m.team.focus
	out := []string{m.st.agentColor(tm.color).Render("● "+tm.name) + m.st.dim.Render(" · "+tm.state+" · what you type goes to "+tm.name+" · /team lead to go back"), ""}
	for _, it := range tm.items {
		if s := m.renderItem(it); s != "" {
			out = append(out, strings.Split(s, "\n")...)
			out = append(out, "")
		}
	}
	return out
}

// startRun runs one turn of the lead from send (a prompt, or the pending messages).
func (m *Model) startRun(send func(ctx context.Context) iter.Seq2[keel.Event, error]) tea.Cmd {
	m.runID++
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	m.working, m.runStart, m.runTokens, m.deltaLen, m.hint, m.interrupted = true, m.now(), 0, 0, "", false
	ch := make(chan tea.Msg, 64)
	m.stream = ch
	run, done := m.runID, m.done
	go func() {
		defer close(ch)
		for ev, err := range send(ctx) {
			select {
			case ch <- eventMsg{run: run, ev: ev, err: err}:
			case <-done:
				return
			}
		}
	}()
	return tea.Batch(m.next(), m.tick())
}
