package tui

import (
	"fmt"
	"io"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// Persister says where a session's transcript is; "" means it keeps none (nothing to resume).
type Persister interface {
	TranscriptPath() string
}

// writeScrollback writes the conversation as it was last shown, then how to resume it, so
// that leaving the full-screen view leaves the conversation in the terminal as Claude Code's
// inline rendering does.
func (m *Model) writeScrollback(w io.Writer) {
	m.team.focus = nil
	if len(m.items) == 0 {
		return
	}
	var b strings.Builder
	for _, l := range m.transcriptLines() {
		b.WriteString(ansi.Truncate(l, m.width, "") + "\n")
	}
	if hint := m.resumeHint(); hint != "" {
		b.WriteString(m.st.dim.Render(hint) + "\n")
	}
	_, _ = io.WriteString(w, b.String())
}

// resumeHint is the command that continues this conversation, or "" when there is none to
// continue (nothing was said, or nothing is kept).
func (m *Model) resumeHint() string {
	if p, ok := m.b.(Persister); ok && p.TranscriptPath() == "" {
		return ""
	}
	if len(m.prompts) == 0 {
		return ""
	}
	return fmt.Sprintf("Resume this conversation with: keel --resume %s", m.b.ID())
}
