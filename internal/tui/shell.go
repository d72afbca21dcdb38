package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/keel-dev/keel/internal/hostexec"
)

// runShell runs a `!` command directly in the session's directory. It is the user's own
// command, so it does not go through the agent's permission checks; the output is shown and
// handed to the model with the next prompt, as context.
func (m *Model) runShell(cmdline string) tea.Cmd {
	dir := m.cwd
	m.hint = "running " + cmdline
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		c := hostexec.Command(ctx, "sh", "-c", cmdline)
		c.Dir = dir
		out, err := c.CombinedOutput()
		return shellDoneMsg{cmd: cmdline, out: strings.TrimRight(string(out), "\n"), err: err}
	}
}

type shellDoneMsg struct {
	cmd, out string
	err      error
}

func (m *Model) onShellDone(msg shellDoneMsg) {
	m.hint = ""
	text := msg.cmd
	if msg.out != "" {
		text += "\n" + msg.out
	}
	if msg.err != nil {
		text += "\n(" + msg.err.Error() + ")"
	}
	m.addItem(&item{kind: kindShell, text: text})
	m.pending = append(m.pending, fmt.Sprintf("<bash-input>%s</bash-input>\n<bash-output>%s</bash-output>", msg.cmd, msg.out))
}
