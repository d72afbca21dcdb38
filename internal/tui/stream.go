package tui

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/keel-dev/keel"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/render"
)

// Messages from the session's event stream, tagged with the run they belong to so a late
// event of an interrupted run is not mistaken for the next one's.
type (
	eventMsg struct {
		run int
		ev  keel.Event
		err error
	}
	runDoneMsg struct{ run int }
	tickMsg    struct{ run int }
)

// submit sends prompt to the session (or queues it while a run is going).
func (m *Model) submit(prompt string) tea.Cmd {
	if m.working {
		m.queued = append(m.queued, prompt)
		m.hint = "queued; sent when the current turn ends"
		return nil
	}
	m.addItem(&item{kind: kindUser, text: prompt})
	if len(m.pending) > 0 {
		prompt = strings.Join(m.pending, "\n") + "\n\n" + prompt
		m.pending = nil
	}
	b := m.b
	return m.startRun(func(ctx context.Context) iter.Seq2[keel.Event, error] { return b.Send(ctx, prompt) })
}

// next waits for the current run's next event.
func (m *Model) next() tea.Cmd {
	ch, run, done := m.stream, m.runID, m.done
	return func() tea.Msg {
		select {
		case msg, ok := <-ch:
			if !ok {
				return runDoneMsg{run: run}
			}
			return msg
		case <-done:
			return nil
		}
	}
}

func (m *Model) tick() tea.Cmd {
	run := m.runID
	return tea.Tick(tickInterval, func(time.Time) tea.Msg { return tickMsg{run: run} })
}

// interrupt cancels the running turn; the session keeps a valid history.
func (m *Model) interrupt() {
	if m.cancel != nil {
		m.cancel()
	}
	// The questions belong to the interrupted calls.
	m.cancelForms()
	m.hint = "interrupted"
	m.interrupted = true
}

// finishRun ends the run and sends the next queued prompt.
func (m *Model) finishRun() tea.Cmd {
	m.working = false
	m.flush(true)
	if m.cancel != nil {
		m.cancel()
		m.cancel = nil
	}
	for _, it := range m.items {
		if it.kind == kindTool && !it.done {
			it.done, it.isErr, it.result = true, true, "interrupted"
		}
	}
	u, cost := m.b.Usage()
	m.usage, m.cost = u, cost
	loopCmd := m.loopRunEnded() // starts a run only when nothing is queued
	if m.working {
		return tea.Batch(loopCmd, m.refreshStatusLine())
	}
	if len(m.queued) > 0 {
		return tea.Batch(loopCmd, m.submitQueued(), m.refreshStatusLine())
	}
	return tea.Batch(loopCmd, m.wakeLead(), m.refreshStatusLine())
}

func (m *Model) submitQueued() tea.Cmd {
	p := m.queued[0]
	m.queued = m.queued[1:]
	return m.submit(p)
}

// flush re-renders the streaming assistant message; final also ends its streaming state.
func (m *Model) flush(final bool) {
	for i := len(m.items) - 1; i >= 0; i-- {
		it := m.items[i]
		if it.kind == kindAssistant && it.streaming {
			it.cache = ""
			if final {
				it.streaming = false
			}
			m.renderItem(it)
			return
		}
	}
}

// streaming returns the assistant message being streamed, starting one if needed.
func (m *Model) streaming() *item {
	if n := len(m.items); n > 0 && m.items[n-1].kind == kindAssistant && m.items[n-1].streaming {
		return m.items[n-1]
	}
	return m.addItem(&item{kind: kindAssistant, streaming: true})
}

// onEvent folds one session event into the transcript: the team's events, the main
// agent's messages, tools and tasks, then status lines.
func (m *Model) onEvent(ev keel.Event) {
	if m.onTeamEvent(ev) {
		return
	}
	o := ev.From()
	if m.onMessageEvent(ev, o.AgentID != "") || m.onToolEvent(ev, o) {
		return
	}
	m.onStatusEvent(ev, o.AgentID != "")
}

// onMessageEvent folds the events of the conversation itself (sub: a subagent's, which
// the transcript leaves out); false when ev is not one of them.
func (m *Model) onMessageEvent(ev keel.Event, sub bool) bool {
	switch e := ev.(type) {
	case keel.Init:
		if !sub {
			m.init = &e
		}
	case keel.TextDelta:
		if !sub {
			it := m.streaming()
			it.text += e.Text
			m.deltaLen += len(e.Text)
		}
	case keel.ThinkingDelta:
		if !sub {
			m.onThinking(e)
		}
	case keel.AssistantMessage:
		if !sub {
			m.flush(true)
			m.runTokens += e.Usage.OutputTokens
			m.deltaLen = 0
			m.ctxUsed = e.Usage.TotalInput() + e.Usage.OutputTokens
			m.usage, m.cost = m.b.Usage()
		}
	case keel.UserMessage:
		if !sub && e.UUID != "" {
			// System reminders (listings, notes) are the harness's additions, not prompts.
			if t, ok := userPrompt(e); ok {
				m.prompts = append(m.prompts, rewindPoint{uuid: e.UUID, text: t})
				m.markPrompt(e.UUID)
			}
		}
	case keel.Result:
		if !sub {
			m.onResult(e)
		}
	default:
		return false
	}
	return true
}

// onThinking adds streamed thinking to the newest thinking item, starting one if needed.
func (m *Model) onThinking(e keel.ThinkingDelta) {
	n := len(m.items)
	if n == 0 || m.items[n-1].kind != kindThinking {
		m.addItem(&item{kind: kindThinking})
	}
	m.items[len(m.items)-1].text += e.Thinking
	m.items[len(m.items)-1].cache = ""
	m.deltaLen += len(e.Thinking)
}

// onResult takes the main agent's result: the usage and price, and the error it ended with.
func (m *Model) onResult(e keel.Result) {
	m.usage, m.cost = e.Usage, e.CostUSD
	for _, mu := range e.ModelUsage {
		m.unpriced = m.unpriced || !mu.PriceKnown
		m.priced = m.priced || mu.PriceKnown
	}
	if u, c := m.b.Usage(); c >= e.CostUSD {
		m.usage, m.cost = u, c
	}
	if e.IsError && !(m.interrupted && render.ResultMessage(event.Result{Subtype: e.Subtype, Text: e.Text}) == "Interrupted.") {
		m.errorf(render.ResultMessage(event.Result{Subtype: e.Subtype, Text: e.Text}))
	}
}

// onToolEvent folds tool calls and background tasks, of every agent; false when ev is
// not one of them.
func (m *Model) onToolEvent(ev keel.Event, o keel.Origin) bool {
	switch e := ev.(type) {
	case keel.ToolStart:
		m.flush(true)
		it := &item{kind: kindTool, id: e.ID, name: e.Name, input: e.Input, agent: o.AgentName}
		m.tools[e.ID] = it
		m.addItem(it)
		if o.AgentID != "" {
			m.taskActivity(o, e.Name)
		}
	case keel.ToolProgress:
		if it := m.tools[e.ID]; it != nil {
			it.progress = firstLineOf(e.Message)
		}
	case keel.ToolEnd:
		if it := m.tools[e.ID]; it != nil {
			it.done, it.isErr, it.dur, it.cache = true, e.IsError, e.Duration, ""
			it.result = toolEndText(e)
		}
	case keel.PermissionDenied:
		if it := m.tools[e.ToolUseID]; it != nil {
			it.done, it.isErr, it.result, it.cache = true, true, "denied: "+e.Reason, ""
		}
	case keel.TaskStarted:
		m.tasks = append(m.tasks, &task{id: e.TaskID, desc: e.Description, kind: e.SubagentType, status: "running"})
	case keel.TaskUpdated:
		if t := m.task(e.TaskID); t != nil {
			t.status = e.Status
		}
	case keel.TaskNotification:
		if t := m.task(e.TaskID); t != nil {
			t.status, t.summary = e.Status, e.Summary
		}
	default:
		return false
	}
	return true
}

// onStatusEvent folds retries, cache breaks, compactions, todos and notices.
func (m *Model) onStatusEvent(ev keel.Event, sub bool) {
	switch e := ev.(type) {
	case keel.Retry:
		m.hint = strings.TrimPrefix(render.RetryLine(event.Retry{Origin: event.Origin(e.Origin), Attempt: e.Attempt, MaxAttempts: e.MaxAttempts, Delay: e.Delay, Err: e.Err}), "keel: ")
	case keel.CacheBreak:
		if !sub {
			m.notice(fmt.Sprintf("prompt cache broke at %s: %s", e.Segment, e.Reason))
		}
	case keel.Compacted:
		m.notice(fmt.Sprintf("conversation compacted (%s, %s tokens before)", e.Trigger, fmtTokens(e.TokensBefore)))
	case keel.Todos:
		if !sub {
			m.addItem(&item{kind: kindNotice, text: todosText(e)})
		}
	case keel.Notice:
		m.showNotice(e)
	}
}

func (m *Model) task(id string) *task {
	for _, t := range m.tasks {
		if t.id == id {
			return t
		}
	}
	return nil
}

// taskActivity notes a subagent's latest tool in its task's summary.
func (m *Model) taskActivity(o keel.Origin, tool string) {
	for _, t := range m.tasks {
		if t.status == "running" && (t.id == o.AgentID || t.desc == o.AgentName) {
			t.summary = "using " + tool
		}
	}
}

// promptText is what the user wrote in a user message: its text blocks without the system
// reminders (listings, notes) the harness adds to the same message.
func promptText(e keel.UserMessage) string {
	var parts []string
	for _, b := range e.Message.Content {
		if b.Type == "text" && !strings.HasPrefix(b.Text, "<system-reminder>") {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func hasToolResult(e keel.UserMessage) bool {
	for _, b := range e.Message.Content {
		if b.Type == "tool_result" {
			return true
		}
	}
	return false
}

func toolEndText(e keel.ToolEnd) string { return resultText(e.Result) }

// markPrompt gives the newest prompt shown without a transcript id the one the session
// recorded it under, so a rewind finds it.
func (m *Model) markPrompt(uuid string) {
	for i := len(m.items) - 1; i >= 0; i-- {
		if it := m.items[i]; it.kind == kindUser {
			if it.uuid == "" {
				it.uuid = uuid
			}
			return
		}
	}
}

func todosText(e keel.Todos) string {
	var b strings.Builder
	b.WriteString("Todos")
	for _, t := range e.Items {
		mark := "☐"
		switch t.Status {
		case "completed":
			mark = "☒"
		case "in_progress":
			mark = "◐"
		}
		b.WriteString("\n" + mark + " " + t.Content)
	}
	return b.String()
}
