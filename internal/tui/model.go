package tui

import (
	"context"
	"io"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"

	"github.com/keel-dev/keel"
)

// Config configures the UI.
type Config struct {
	// Backend is the session; Asker must be the one whose Ask the session was built with
	// (nil: the session never asks).
	Backend Backend
	Asker   *Asker
	// Elicitor must be the one whose Elicit the session was built with (nil: MCP servers'
	// questions are not asked here). OpenURL opens a URL-mode question's address in the
	// user's browser; nil means the user opens it.
	Elicitor *Elicitor
	OpenURL  func(url string) error
	// SignIns must be the one whose Authorize the session was built with (nil: MCP servers'
	// sign-ins are not shown here).
	SignIns *SignIns
	// Prompt, if set, is sent as soon as the UI starts.
	Prompt string
	// NoColor drops colours (NO_COLOR).
	NoColor bool
	// Version is shown in the welcome line.
	Version string
	// Now is the clock; nil means time.Now. Tests fix it so frames are stable.
	Now func() time.Time
	// PrefsPath is the file the UI keeps its theme and editor mode in; "" keeps them for this
	// run only. ReportDir is where /bug writes reports; "" turns /bug off.
	PrefsPath, ReportDir string
	// Editor is the command /memory opens a file with ($VISUAL, else $EDITOR; it may carry
	// arguments); "" lists the files only.
	Editor string
	// Out receives the conversation when the UI ends, for the terminal's scrollback (the
	// full-screen view leaves nothing behind), and how to resume it; nil writes nothing.
	Out io.Writer
}

// contextWindow is the window the "context used" figure is measured against; every model
// keel ships defaults for has at least this much.
const contextWindow = 200_000

// tickInterval paces the spinner and the re-render of the streaming message.
const tickInterval = 100 * time.Millisecond

// Model is the Bubble Tea model of an interactive session.
type Model struct {
	cfg   Config
	b     Backend
	st    styles
	md    *markdown
	now   func() time.Time
	cwd   string
	done  chan struct{} // closed when the program ends; unblocks waiting commands
	width int
	hgt   int

	items []*item
	// first is the first item rendered: the ones above it, of a long resumed conversation,
	// are rendered only once the user pages up to them.
	first    int
	tools    map[string]*item
	expanded bool
	scroll   int // lines scrolled up from the bottom

	input   textarea.Model
	inp     inputState
	compl   completion
	pending []string // shell outputs to hand to the model with the next prompt

	working bool
	// interrupted says the user stopped the current run: its end needs no error line.
	interrupted bool
	runStart    time.Time
	runTokens   int64
	deltaLen    int
	cancel      context.CancelFunc
	stream      chan tea.Msg
	runID       int
	frame       int
	queued      []string // prompts typed while working, sent after

	asks      []askMsg
	askSel    int
	askReason bool // typing a deny reason in the input

	forms []*form // MCP servers' questions, the first one shown

	picker *picker
	team   teamState

	lastEsc, lastCtrlC time.Time
	hint               string
	// warnings counts the warning and error notices shown, for the status line.
	warnings int

	tasks   []*task
	ctxUsed int64
	// window is the context window ctxUsed is measured against.
	window int64
	usage  keel.Usage
	cost   float64
	// unpriced and priced say whether some model used so far has no known price, and whether
	// some has one: cost alone would show an unknown price as $0.00.
	unpriced, priced bool
	init             *keel.Init
	prompts          []rewindPoint
	always           []string
	quitting         bool

	// started is when the UI started (the status line's session duration).
	started time.Time
	prefs   prefs
	vim     vimState
	sl      statusLineState
	// loop is the active /loop, if any.
	loop    *loopState
	loopGen int
	// lineAsk, when set, is a question the next line typed answers (a rule to add).
	lineAsk *lineAsk
}

// rewindPoint is a user message the conversation can be rewound to.
type rewindPoint struct{ uuid, text string }

// task is a background task or subagent shown in the panel.
type task struct {
	id, desc, kind, status, summary string
}

// New builds the model. Nothing costly happens here: the Markdown renderer is built on the
// first assistant message.
func New(cfg Config) *Model {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	ta := textarea.New()
	ta.ShowLineNumbers = false
	ta.Placeholder = `Try "explain this codebase" · / for commands · ! for shell · @ for files`
	ta.SetPromptFunc(2, func(p textarea.PromptInfo) string {
		if p.LineNumber == 0 {
			return "❯ "
		}
		return "  "
	})
	ta.KeyMap.InsertNewline = key.NewBinding(key.WithKeys("shift+enter", "alt+enter", "ctrl+j"))
	ta.CharLimit = 0
	ta.MaxHeight = 0
	ta.SetHeight(1)
	ta.Focus()
	p := loadPrefs(cfg.PrefsPath)
	st := themeStyles(p.Theme, cfg.NoColor)
	m := &Model{
		cfg: cfg, b: cfg.Backend, st: st, md: &markdown{noColor: cfg.NoColor, style: st.glamourStyle()},
		now: now, cwd: cfg.Backend.Cwd(), done: make(chan struct{}), width: 80, hgt: 24,
		tools: map[string]*item{}, input: ta, inp: newInputState(),
		started: now(), prefs: p, vim: vimState{on: p.EditorMode == "vim"},
	}
	m.input.SetWidth(m.width - 2)
	m.window = contextWindow
	m.loadHistory()
	m.refreshContext()
	if n, ok := cfg.Backend.(Noticer); ok {
		for _, e := range n.Notices() {
			m.showNotice(e)
		}
	}
	return m
}

// Init starts listening for permission asks and sends the first prompt, if any.
func (m *Model) Init() tea.Cmd {
	cmds := []tea.Cmd{m.waitAsk(), m.waitElicit(), m.waitSignIn(), m.refreshStatusLine()}
	if p := strings.TrimSpace(m.cfg.Prompt); p != "" {
		cmds = append(cmds, m.submit(p))
	}
	return tea.Batch(cmds...)
}

// Close releases the goroutines waiting for asks and events; call it when the program ends.
func (m *Model) Close() {
	select {
	case <-m.done:
	default:
		close(m.done)
	}
	if m.cancel != nil {
		m.cancel()
	}
}

func (m *Model) waitAsk() tea.Cmd {
	if m.cfg.Asker == nil {
		return nil
	}
	reqs, done := m.cfg.Asker.reqs, m.done
	return func() tea.Msg {
		select {
		case a := <-reqs:
			return a
		case <-done:
			return nil
		}
	}
}

func (m *Model) addItem(it *item) *item {
	m.items = append(m.items, it)
	m.scroll = 0
	return it
}

func (m *Model) notice(text string) { m.addItem(&item{kind: kindNotice, text: text}) }

// showNotice puts a session notice in the transcript; warnings and errors are also counted in
// the status line, so one that scrolled away is still seen.
func (m *Model) showNotice(e keel.Notice) {
	switch e.Level {
	case "error":
		m.warnings++
		m.errorf(e.Text)
	case "warn", "warning":
		m.warnings++
		m.notice("warning: " + e.Text)
	default:
		m.notice(e.Text)
	}
}
func (m *Model) errorf(text string) { m.addItem(&item{kind: kindError, text: text}) }
