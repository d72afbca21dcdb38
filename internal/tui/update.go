package tui

import (
	"context"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/keel-dev/keel"
)

// doublePress is how close two Esc or Ctrl+C presses must be to count as a double press.
const doublePress = 1500 * time.Millisecond

// permissionModes is the Shift+Tab cycle.
var permissionModes = []keel.PermissionMode{keel.ModeDefault, keel.ModeAcceptEdits, keel.ModePlan}

// Update folds a message into the model.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.hgt = max(msg.Width, 20), max(msg.Height, 6)
		m.input.SetWidth(m.width - 2)
		return m, nil
	case eventMsg:
		if msg.run != m.runID {
			return m, nil
		}
		if msg.err != nil {
			if !strings.Contains(msg.err.Error(), context.Canceled.Error()) {
				m.errorf(msg.err.Error())
			}
		} else {
			m.onEvent(msg.ev)
		}
		return m, m.next()
	case runDoneMsg:
		if msg.run != m.runID {
			return m, nil
		}
		return m, m.finishRun()
	case tickMsg:
		if msg.run != m.runID || !m.working {
			return m, nil
		}
		m.frame++
		m.flush(false)
		return m, m.tick()
	case askMsg:
		m.asks = append(m.asks, msg)
		return m, m.waitAsk()
	case idleEventMsg:
		return m, m.onIdleEvent(msg.ev)
	case *form:
		m.forms = append(m.forms, msg)
		return m, tea.Batch(m.waitElicit(), msg.watch(m.done))
	case signInMsg:
		return m, m.onSignIn(msg)
	case signInDoneMsg:
		return m, m.onSignInDone(msg)
	case formGoneMsg:
		m.closeForm(msg.f, "withdrawn")
		return m, nil
	case shellDoneMsg:
		m.onShellDone(msg)
		return m, nil
	case noticeMsg:
		m.hint = ""
		m.notice(msg.text)
		return m, nil
	case statusLineMsg:
		return m, m.onStatusLine(msg)
	case loopTickMsg:
		return m, m.onLoopTick(msg)
	case statusLineTickMsg:
		return m, m.refreshStatusLine()
	case cmdDoneMsg:
		m.hint = ""
		if msg.err != nil {
			m.errorf(msg.err.Error()) // errors say what failed; the done text would not fit
			return m, nil
		}
		if msg.rewindTo != "" && msg.conv {
			m.dropFrom(msg.rewindTo)
		}
		if msg.resumed {
			m.afterResume()
		}
		m.notice(msg.what)
		return m, m.refreshStatusLine()
	case tea.PasteMsg:
		if m.formActive() {
			m.formPaste(msg.Content)
			return m, nil
		}
		if len(m.asks) > 0 && !m.askReason || m.picker != nil {
			return m, nil
		}
		m.input.InsertString(m.inp.paste(msg.Content))
		m.afterEdit()
		return m, nil
	case tea.KeyPressMsg:
		return m, m.key(msg)
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	return m, cmd
}

// key handles a key press: global keys first, then the open overlay, then the input.
func (m *Model) key(msg tea.KeyPressMsg) tea.Cmd {
	k := msg.String()
	now := m.now()
	if k != "ctrl+c" {
		m.lastCtrlC = time.Time{}
	}
	if m.formActive() && k != "ctrl+c" && k != "pgup" && k != "pgdown" {
		return m.formKey(msg)
	}
	if cmd, ok := m.globalKey(k, now); ok {
		return cmd
	}
	if m.picker != nil {
		return m.pickerKey(msg)
	}
	if len(m.asks) > 0 && !m.askReason {
		return m.askKey(k)
	}
	if m.vim.on && !m.askReason && m.vimKey(msg) {
		return nil
	}
	if k == "esc" {
		return m.escape(now)
	}
	if m.compl.kind != 0 && m.completionKey(k) {
		return nil
	}
	return m.inputKey(msg, k)
}

// globalKey handles the keys that act whatever is open; ok says k was one of them.
func (m *Model) globalKey(k string, now time.Time) (cmd tea.Cmd, ok bool) {
	switch k {
	case "ctrl+c":
		if !m.lastCtrlC.IsZero() && now.Sub(m.lastCtrlC) < doublePress {
			m.quitting = true
			return tea.Quit, true
		}
		m.lastCtrlC = now
		if m.working {
			m.interrupt()
		}
		m.input.Reset()
		m.hint = "press ctrl+c again to exit"
		return nil, true
	case "shift+tab":
		return m.cyclePermissionMode(), true
	case "ctrl+o":
		m.expanded = !m.expanded
		return nil, true
	case "ctrl+b":
		bg, ok := m.b.(Backgrounder)
		if !ok {
			m.hint = unavailable("moving a subagent to the background")
			return nil, true
		}
		return func() tea.Msg {
			return cmdDoneMsg{what: "moved to the background", err: bg.Background(context.Background())}
		}, true
	case "pgup":
		m.scroll += max(m.hgt/2, 1)
		if m.first > 0 && m.scroll >= len(m.transcriptLines())-m.hgt/2 {
			m.pageEarlier()
		}
		return nil, true
	case "pgdown":
		m.scroll = max(m.scroll-max(m.hgt/2, 1), 0)
		return nil, true
	}
	return nil, false
}

// cyclePermissionMode switches to the permission mode after the current one (shift+tab).
func (m *Model) cyclePermissionMode() tea.Cmd {
	cur := m.b.PermissionMode()
	next := permissionModes[0]
	for i, pm := range permissionModes {
		if pm == cur {
			next = permissionModes[(i+1)%len(permissionModes)]
		}
	}
	if err := m.b.SetPermissionMode(next); err != nil {
		m.errorf("could not switch the permission mode: " + err.Error())
	}
	return m.refreshStatusLine()
}

// completionKey handles a key while the completion menu is open; true says the key is
// used up (an enter that accepted a command's completion goes on to the input).
func (m *Model) completionKey(k string) bool {
	switch k {
	case "up":
		m.compl.sel = (m.compl.sel + len(m.compl.items) - 1) % len(m.compl.items)
		return true
	case "down":
		m.compl.sel = (m.compl.sel + 1) % len(m.compl.items)
		return true
	case "tab":
		m.acceptCompletion()
		return true
	case "enter":
		if m.compl.kind == '@' || m.input.Value() != m.compl.items[m.compl.sel].value {
			m.acceptCompletion()
			if m.compl.kind == '@' || !strings.HasPrefix(m.input.Value(), "/") {
				return true
			}
		}
	}
	return false
}

// inputKey handles a key in the prompt input: enter submits, up and down walk the history
// at the first and last line, everything else edits.
func (m *Model) inputKey(msg tea.KeyPressMsg, k string) tea.Cmd {
	switch k {
	case "enter":
		v := m.input.Value()
		if strings.HasSuffix(v, "\\") { // backslash-enter: a newline on any terminal
			m.input.SetValue(strings.TrimSuffix(v, "\\") + "\n")
			m.afterEdit()
			return nil
		}
		return m.enter()
	case "up":
		if m.input.Line() == 0 {
			if v, ok := m.inp.prev(m.input.Value()); ok {
				m.setInput(v)
				return nil
			}
		}
	case "down":
		if m.input.Line() == m.input.LineCount()-1 {
			if v, ok := m.inp.next(); ok {
				m.setInput(v)
				return nil
			}
		}
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	m.afterEdit()
	return cmd
}

// escape interrupts a run; a second Esc while idle opens the rewind picker.
func (m *Model) escape(now time.Time) tea.Cmd {
	defer func() { m.lastEsc = now }()
	if m.lineAsk != nil {
		m.lineAsk = nil
		m.input.Reset()
		return nil
	}
	if m.askReason {
		m.denyWithReason()
		return nil
	}
	if m.compl.kind != 0 {
		m.compl.kind = 0
		return nil
	}
	if m.working {
		m.interrupt()
		return nil
	}
	if m.loop != nil { // between two runs: Esc stops the loop
		m.stopLoop("stopped")
		return nil
	}
	if !m.lastEsc.IsZero() && now.Sub(m.lastEsc) < doublePress {
		m.lastEsc = time.Time{}
		m.openRewind()
		return nil
	}
	return nil
}

func (m *Model) enter() tea.Cmd {
	if m.askReason {
		m.denyWithReason()
		return nil
	}
	raw := m.input.Value()
	v := strings.TrimSpace(m.inp.expand(raw))
	if v == "" {
		return nil
	}
	if la := m.lineAsk; la != nil {
		m.lineAsk = nil
		m.input.Reset()
		return la.answer(v)
	}
	if m.vim.on {
		m.vim.normal = false
	}
	m.inp.remember(raw)
	m.input.Reset()
	m.input.SetHeight(1)
	m.compl.kind = 0
	switch {
	case strings.HasPrefix(v, "!"):
		return m.runShell(strings.TrimSpace(v[1:]))
	case strings.HasPrefix(v, "/") && !strings.HasPrefix(v, "//"):
		return m.command(v)
	case m.team.focus != nil:
		m.messageTeammate(m.team.focus.name, v)
		return nil
	}
	return m.submit(v)
}

func (m *Model) setInput(v string) {
	m.input.SetValue(v)
	m.input.MoveToEnd()
	m.afterEdit()
	m.compl.kind = 0
}

// afterEdit resizes the input to its content and refreshes completion.
func (m *Model) afterEdit() {
	m.input.SetHeight(min(max(m.input.LineCount(), 1), 8))
	if !m.askReason {
		m.refreshCompletion(m.input.Value())
	}
}

// dropFrom removes the transcript from the user message with uuid on (after a rewind).
func (m *Model) dropFrom(uuid string) {
	for i, p := range m.prompts {
		if p.uuid == uuid {
			m.prompts = m.prompts[:i]
			break
		}
	}
	for j, it := range m.items {
		if it.kind == kindUser && it.uuid == uuid {
			m.items = m.items[:j]
			m.first = min(m.first, j)
			return
		}
	}
}
