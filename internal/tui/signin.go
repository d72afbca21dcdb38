package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// SignIns carries MCP servers' OAuth sign-ins to the UI: the authorization page is opened
// in the browser (when there is one) and its address shown in the transcript, with the
// outcome once the browser came back. Pass its Authorize method as
// keel.Options.MCPAuthorize before the session exists, then give it to [Run].
type SignIns struct {
	reqs chan signInMsg
	open func(url string) error
}

// NewSignIns returns SignIns that open pages with open; nil means the user opens them.
func NewSignIns(open func(url string) error) *SignIns {
	return &SignIns{reqs: make(chan signInMsg), open: open}
}

// signInMsg is a sign-in the user was sent to; ctx ends when the flow is over.
type signInMsg struct {
	ctx         context.Context
	server, url string
	opened      bool
	openProblem string
}

// Authorize opens the authorization page and shows its address; it returns once the UI has
// it (the flow then waits for the browser's redirect), or when ctx ends.
func (s *SignIns) Authorize(ctx context.Context, server, url string) error {
	msg := signInMsg{ctx: ctx, server: server, url: url}
	if s.open != nil {
		if err := s.open(url); err != nil {
			msg.openProblem = err.Error()
		} else {
			msg.opened = true
		}
	}
	select {
	case s.reqs <- msg:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (m *Model) waitSignIn() tea.Cmd {
	if m.cfg.SignIns == nil {
		return nil
	}
	reqs, done := m.cfg.SignIns.reqs, m.done
	return func() tea.Msg {
		select {
		case s := <-reqs:
			return s
		case <-done:
			return nil
		}
	}
}

// signInDoneMsg says a sign-in flow ended; the server's status tells how. tries counts the
// looks at a status still pending (the connection records its outcome just after).
type signInDoneMsg struct {
	server string
	tries  int
}

// signInRecheck is how long the UI waits before looking at a still pending server again,
// and signInTries how often it looks.
const (
	signInRecheck = 200 * time.Millisecond
	signInTries   = 25
)

func (m *Model) onSignIn(s signInMsg) tea.Cmd {
	how := "Open this address in your browser ($BROWSER is not set):"
	switch {
	case s.opened:
		how = "Opened in your browser; if it did not open, use this address:"
	case s.openProblem != "":
		how = "Could not open the browser (" + s.openProblem + "); open this address:"
	}
	m.addItem(&item{kind: kindNotice, text: s.server + " (MCP server) asks you to sign in. " + how, url: s.url})
	done := m.done
	return tea.Batch(m.waitSignIn(), func() tea.Msg {
		select {
		case <-s.ctx.Done():
			return signInDoneMsg{server: s.server}
		case <-done:
			return nil
		}
	})
}

func (m *Model) onSignInDone(d signInDoneMsg) tea.Cmd {
	ms, ok := m.b.(MCPStatuser)
	if !ok {
		m.notice(d.server + ": the sign-in ended; /mcp shows whether it connected")
		return nil
	}
	for _, s := range ms.MCPServers() {
		if s.Name != d.server {
			continue
		}
		switch {
		case s.Status == "connected":
			m.notice(d.server + ": signed in, connected")
		case strings.HasPrefix(s.Status, "pending") && d.tries < signInTries:
			done := m.done
			return func() tea.Msg {
				select {
				case <-time.After(signInRecheck):
					return signInDoneMsg{server: d.server, tries: d.tries + 1}
				case <-done:
					return nil
				}
			}
		case strings.HasPrefix(s.Status, "pending"):
			m.notice(d.server + ": the sign-in is over; the server is still connecting (/mcp shows its status)")
		default:
			m.errorf(fmt.Sprintf("%s: not signed in: %s (/mcp login %s tries again)", d.server, s.Status, d.server))
		}
	}
	return nil
}

// drawURL hard-wraps an address over whole lines, unindented so it copies as one, and
// links it (OSC 8) where the terminal supports that.
func (m *Model) drawURL(url string) string {
	st := lipgloss.NewStyle()
	if !m.st.noColor {
		st = st.Hyperlink(url).Underline(true)
	}
	lines := strings.Split(ansi.Hardwrap(url, max(m.width, 20), false), "\n")
	for i, l := range lines {
		lines[i] = st.Render(l)
	}
	return strings.Join(lines, "\n")
}
