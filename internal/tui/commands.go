package tui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/keel-dev/keel/internal/cost"
)

// commands are the built-in slash commands, in help order.
var commands = []complItem{
	{"/help", "show commands and keys"},
	{"/clear", "start a fresh conversation"},
	{"/compact", "summarise the conversation to free context"},
	{"/resume", "resume an earlier session"},
	{"/rewind", "rewind code and/or conversation to an earlier prompt"},
	{"/model", "show or switch the model: /model NAME"},
	{"/agents", "list agent definitions"},
	{"/mcp", "MCP servers; /mcp login NAME signs in"},
	{"/memory", "list the memory files in use"},
	{"/permissions", "show the permission mode and rules allowed this session"},
	{"/cost", "show tokens and cost so far"},
	{"/config", "show this session's configuration"},
	{"/init", "write a starter KEEL.md for this project"},
	{"/team", "show the agent team; /team NAME views a teammate"},
	{"/tasks", "the team's task board"},
	{"/msg", "message a teammate: /msg NAME TEXT"},
	{"/exit", "quit"},
}

func (m *Model) commandItems() []complItem {
	items := append([]complItem(nil), commands...)
	if sl, ok := m.b.(SkillLister); ok {
		for _, s := range sl.Skills() {
			items = append(items, complItem{"/" + s.Name, s.Description})
		}
	} else if m.init != nil {
		for _, s := range m.init.Skills {
			items = append(items, complItem{"/" + s, "skill"})
		}
	}
	return items
}

// unavailable is what a command says when the backend lacks the interface it needs.
func unavailable(what string) string {
	return what + " is not available in this build"
}

// command runs a slash command; unknown commands that name a skill go to the model.
func (m *Model) command(line string) tea.Cmd {
	name, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
	arg = strings.TrimSpace(arg)
	ctx := context.Background()
	switch name {
	case "/help":
		m.notice(helpText())
	case "/exit", "/quit":
		m.quitting = true
		return tea.Quit
	case "/clear":
		c, ok := m.b.(Clearer)
		if !ok {
			m.notice(unavailable("/clear"))
			return nil
		}
		if err := c.Clear(ctx); err != nil {
			m.errorf("clear: " + err.Error())
			return nil
		}
		m.items, m.tools, m.prompts, m.ctxUsed = nil, map[string]*item{}, nil, 0
		m.notice("conversation cleared")
	case "/compact":
		c, ok := m.b.(Compactor)
		if !ok {
			m.notice(unavailable("/compact"))
			return nil
		}
		m.hint = "compacting…"
		return func() tea.Msg { return cmdDoneMsg{what: "compacted", err: c.Compact(ctx, arg)} }
	case "/resume":
		return m.openResume()
	case "/rewind":
		m.openRewind()
	case "/model":
		if arg == "" {
			m.notice("model: " + m.b.Model() + " (switch with /model NAME)")
			return nil
		}
		m.b.SetModel(arg)
		m.notice("model set to " + m.b.Model())
	case "/agents":
		m.listAgents()
	case "/mcp":
		if sub, name, _ := strings.Cut(arg, " "); sub == "login" {
			return m.loginMCP(strings.TrimSpace(name))
		}
		m.listMCP()
	case "/memory":
		ml, ok := m.b.(MemoryLister)
		if !ok {
			m.notice(unavailable("/memory"))
			return nil
		}
		var b strings.Builder
		b.WriteString("Memory files")
		for _, f := range ml.MemoryFiles() {
			fmt.Fprintf(&b, "\n  %s (%s)", f.Path, f.Scope)
		}
		m.notice(b.String())
	case "/permissions":
		text := "permission mode: " + string(m.b.PermissionMode()) + " (shift+tab cycles default → acceptEdits → plan)"
		if len(m.always) > 0 {
			text += "\nallowed this session (also in .keel/settings.local.json):\n  " + strings.Join(m.always, "\n  ")
		}
		m.notice(text)
	case "/cost":
		m.notice(m.costText())
	case "/config":
		m.notice(fmt.Sprintf("session %s\nmodel %s\npermission mode %s\ncwd %s\ncolour %v",
			m.b.ID(), m.b.Model(), m.b.PermissionMode(), m.cwd, !m.cfg.NoColor))
	case "/team", "/tasks", "/msg":
		return m.teamCommand(name, arg)
	case "/init":
		path, err := writeStarterMemory(m.cwd)
		if err != nil {
			m.errorf("init: " + err.Error())
			return nil
		}
		m.notice("wrote " + path + "; edit it to tell keel about this project")
	default:
		// A skill or an unknown command: the session expands skills from the prompt text.
		return m.submit(line)
	}
	return nil
}

// cmdDoneMsg reports a slow command that ran off the UI goroutine.
type cmdDoneMsg struct {
	what     string
	err      error
	rewindTo string // set by a rewind: drop the transcript from this prompt on
	conv     bool
}

func (m *Model) listAgents() {
	var names []string
	if al, ok := m.b.(AgentLister); ok {
		for _, a := range al.Agents() {
			names = append(names, m.st.agentColor(a.Color).Render(a.Name)+"  "+a.Description)
		}
	} else if m.init != nil {
		names = m.init.Agents
	} else {
		m.notice(unavailable("/agents"))
		return
	}
	m.notice("Agents\n  " + strings.Join(names, "\n  "))
}

// loginMCP signs in to the server called name, off the UI goroutine: the sign-in shows up
// through SignIns, and the outcome when the browser came back.
func (m *Model) loginMCP(name string) tea.Cmd {
	l, ok := m.b.(MCPLoginer)
	if !ok {
		m.notice(unavailable("/mcp login"))
		return nil
	}
	if name == "" {
		m.notice("usage: /mcp login NAME (see /mcp for the servers)")
		return nil
	}
	m.hint = "signing in to " + name + "…"
	return func() tea.Msg {
		return cmdDoneMsg{what: "signed in to " + name, err: l.LoginMCP(context.Background(), name)}
	}
}

func (m *Model) listMCP() {
	var lines []string
	if ms, ok := m.b.(MCPStatuser); ok {
		for _, s := range ms.MCPServers() {
			l := s.Name + ": " + s.Status
			if strings.HasPrefix(s.Status, "needs-auth") {
				if _, ok := m.b.(MCPLoginer); ok {
					l += " (/mcp login " + s.Name + ")"
				}
			}
			lines = append(lines, l)
		}
	} else if m.init != nil {
		for _, s := range m.init.MCPServers {
			lines = append(lines, s.Name+": "+s.Status)
		}
	} else {
		m.notice(unavailable("/mcp"))
		return
	}
	if len(lines) == 0 {
		lines = []string{"no MCP servers configured"}
	}
	m.notice("MCP servers\n  " + strings.Join(lines, "\n  "))
}

func (m *Model) costText() string {
	u := m.usage
	share := 0.0
	if in := u.TotalInput(); in > 0 {
		share = float64(u.CacheReadInputTokens) / float64(in) * 100
	}
	return fmt.Sprintf("tokens: %s in (%s cache read, %s cache write), %s out\ncost: %s\ncache read share: %.0f%%",
		fmtTokens(u.TotalInput()), fmtTokens(u.CacheReadInputTokens), fmtTokens(u.CacheCreationInputTokens),
		fmtTokens(u.OutputTokens), m.costString(4), share)
}

// costString is the cost so far for people: "price unknown" where a model used, or the one
// in use, has none.
func (m *Model) costString(digits int) string {
	unpriced, priced := m.pricing()
	return cost.Format(m.cost, !unpriced, priced, digits)
}

// statusCost is the status line's cost and separator: "$0.12 · ", "$0.12+? · " when some
// model has no price, nothing when none has one — never a made-up $0.00 (/cost says more).
func (m *Model) statusCost() string {
	switch unpriced, priced := m.pricing(); {
	case !unpriced:
		return fmt.Sprintf("$%.2f · ", m.cost)
	case priced:
		return fmt.Sprintf("$%.2f+? · ", m.cost)
	}
	return ""
}

// pricing says whether some model used so far, or the one in use, has no known price, and
// whether some has one.
func (m *Model) pricing() (unpriced, priced bool) {
	if _, ok := cost.Lookup(m.b.Model()); ok {
		return m.unpriced, true
	}
	return true, m.priced
}

func helpText() string {
	var b strings.Builder
	b.WriteString("Commands")
	for _, c := range commands {
		fmt.Fprintf(&b, "\n  %-13s %s", c.value, c.desc)
	}
	b.WriteString(`
Keys
  enter submit · ctrl+j / alt+enter newline · ↑/↓ history · tab complete
  esc interrupt · esc esc rewind · shift+tab permission mode · ctrl+o expand tools
  ctrl+b background subagent · pgup/pgdn scroll · ctrl+c twice quit
  !cmd runs a shell command here; its output goes to the model with your next prompt
  @path mentions a file`)
	return b.String()
}

// runShell runs a `!` command directly in the session's directory. It is the user's own
// command, so it does not go through the agent's permission checks; the output is shown and
// handed to the model with the next prompt, as context.
func (m *Model) runShell(cmdline string) tea.Cmd {
	dir := m.cwd
	m.hint = "running " + cmdline
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		c := exec.CommandContext(ctx, "sh", "-c", cmdline)
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

// starterMemory is the KEEL.md /init writes; the build and test lines come from what the
// project looks like.
func writeStarterMemory(dir string) (string, error) {
	path := filepath.Join(dir, "KEEL.md")
	if _, err := os.Stat(path); err == nil {
		return "", errors.New(path + " already exists; not overwriting it")
	}
	build, test := "", ""
	switch {
	case exists(dir, "go.mod"):
		build, test = "go build ./...", "go test ./..."
	case exists(dir, "package.json"):
		build, test = "npm run build", "npm test"
	case exists(dir, "Cargo.toml"):
		build, test = "cargo build", "cargo test"
	case exists(dir, "pyproject.toml"), exists(dir, "setup.py"):
		build, test = "pip install -e .", "pytest"
	case exists(dir, "Makefile"):
		build, test = "make", "make test"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\nNotes for keel about this project. keel reads this file at the start of every session.\n\n", filepath.Base(dir))
	b.WriteString("## Commands\n\n")
	if build != "" {
		fmt.Fprintf(&b, "- Build: `%s`\n- Test: `%s`\n", build, test)
	} else {
		b.WriteString("- Build: (how to build)\n- Test: (how to run the tests)\n")
	}
	b.WriteString("\n## Layout\n\n- (where the main code lives, what each directory is for)\n")
	b.WriteString("\n## Conventions\n\n- (code style, naming, things to avoid)\n")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}

func exists(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}
