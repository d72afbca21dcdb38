package tui

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/keel-dev/keel"
	"github.com/keel-dev/keel/internal/cost"
)

// command is a built-in slash command: run gets the text after the name.
type command struct {
	name, desc string
	run        func(m *Model, arg string) tea.Cmd
}

// commands are the built-in slash commands, in help order.
var commands = []command{
	{"/help", "show commands and keys", nil}, // run by command: the help lists this table
	{"/clear", "start a fresh conversation", (*Model).cmdClear},
	{"/compact", "summarise the conversation to free context: /compact [what to keep]", (*Model).cmdCompact},
	{"/resume", "resume an earlier session", func(m *Model, _ string) tea.Cmd { return m.openResume() }},
	{"/rewind", "rewind code and/or conversation to an earlier prompt", func(m *Model, _ string) tea.Cmd { m.openRewind(); return nil }},
	{"/rename", "name this session: /rename TITLE (keel --resume TITLE finds it)", (*Model).cmdRename},
	{"/export", "write the conversation as Markdown: /export [FILE]", (*Model).cmdExport},
	{"/copy", "copy the last answer to the clipboard (through the terminal)", (*Model).cmdCopy},
	{"/plan", "switch to plan mode: the agent plans before it changes anything", (*Model).cmdPlan},
	{"/status", "version, session, model, account, settings and what is loaded", (*Model).cmdStatus},
	{"/context", "what fills the context window, by part", (*Model).cmdContext},
	{"/cost", "tokens and cost so far", func(m *Model, _ string) tea.Cmd { m.notice(m.costText()); return nil }},
	{"/model", "pick the model, or switch: /model NAME", (*Model).cmdModel},
	{"/permissions", "list, add and remove permission rules", (*Model).cmdPermissions},
	{"/config", "output style, theme, editor mode, model, permission mode, status line", (*Model).cmdConfig},
	{"/output-style", "pick how keel answers, or set it: /output-style NAME", (*Model).cmdOutputStyle},
	{"/theme", "pick the colour theme: dark, light, mono", (*Model).cmdTheme},
	{"/vim", "switch between vim and normal editing of the prompt", (*Model).cmdVim},
	{"/statusline", "show the status line command, or set one: /statusline COMMAND (off removes it)", (*Model).cmdStatusLine},
	{"/doctor", "check the model API, settings, MCP servers and versions", (*Model).cmdDoctor},
	{"/hooks", "list the configured hooks", (*Model).cmdHooks},
	{"/skills", "list the skills and custom commands; /skills reload reads them again", (*Model).cmdSkills},
	{"/agents", "list agent definitions", func(m *Model, _ string) tea.Cmd { m.listAgents(); return nil }},
	{"/mcp", "MCP servers; /mcp login NAME signs in", (*Model).cmdMCP},
	{"/plugin", "plugins: list and switch on or off, install, uninstall; /plugin marketplace [add SOURCE]", (*Model).cmdPlugin},
	{"/memory", "the memory files in use; enter opens one in your editor", (*Model).cmdMemory},
	{"/loop", "run a prompt again and again: /loop [interval] PROMPT (5m, 2h; none: self-paced); /loop stop", (*Model).cmdLoop},
	{"/todos", "the agent's todo list", (*Model).cmdTodos},
	{"/bashes", "background shells: list, stop", (*Model).cmdBashes},
	{"/init", "write a KEEL.md from what the project's files say", (*Model).cmdInit},
	{"/add-dir", "add a working directory: /add-dir DIR", func(m *Model, arg string) tea.Cmd { return m.submit(strings.TrimSpace("/add-dir " + arg)) }},
	{"/review", "review a pull request (gh): /review [NUMBER]", promptCommand("/review", reviewPrompt)},
	{"/security-review", "review this branch's changes for security problems", promptCommand("/security-review", securityReviewPrompt)},
	{"/pr-comments", "show a pull request's comments (gh): /pr-comments [NUMBER]", promptCommand("/pr-comments", prCommentsPrompt)},
	{"/bug", "write a bug report (keys and tokens redacted): /bug WHAT WENT WRONG", (*Model).cmdBug},
	{"/feedback", "same as /bug", (*Model).cmdBug},
	{"/team", "show the agent team; /team NAME views a teammate", func(m *Model, arg string) tea.Cmd { return m.teamCommand("/team", arg) }},
	{"/tasks", "the team's task board", func(m *Model, arg string) tea.Cmd { return m.teamCommand("/tasks", arg) }},
	{"/msg", "message a teammate: /msg NAME TEXT", func(m *Model, arg string) tea.Cmd { return m.teamCommand("/msg", arg) }},
	{"/exit", "quit", (*Model).cmdExit},
}

func (m *Model) commandItems() []complItem {
	items := make([]complItem, 0, len(commands))
	for _, c := range commands {
		items = append(items, complItem{c.name, c.desc})
	}
	if sl, ok := m.b.(SkillLister); ok {
		for _, s := range sl.Skills() {
			if s.UserInvocable {
				items = append(items, complItem{"/" + s.Name, s.Description})
			}
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
	if name == "/quit" {
		name = "/exit"
	}
	for _, c := range commands {
		switch {
		case c.name != name:
		case c.run == nil:
			m.notice(helpText())
			return nil
		default:
			return c.run(m, arg)
		}
	}
	// A skill or an unknown command: the session expands skills from the prompt text.
	return m.submit(line)
}

// cmdDoneMsg reports a slow command that ran off the UI goroutine.
type cmdDoneMsg struct {
	what     string
	err      error
	rewindTo string // set by a rewind: drop the transcript from this prompt on
	conv     bool
	resumed  bool // set by /resume: show the conversation switched to
}

// later runs work off the UI goroutine and reports it as done (what) or failed.
func later(what string, work func(ctx context.Context) error) tea.Cmd {
	return func() tea.Msg { return cmdDoneMsg{what: what, err: work(context.Background())} }
}

// noticeMsg is text a slow command produced, shown as a notice.
type noticeMsg struct{ text string }

func (m *Model) cmdExit(string) tea.Cmd {
	m.quitting = true
	return tea.Quit
}

func (m *Model) cmdClear(string) tea.Cmd {
	c, ok := m.b.(Clearer)
	if !ok {
		m.notice(unavailable("/clear"))
		return nil
	}
	if err := c.Clear(context.Background()); err != nil {
		m.errorf("could not clear the conversation: " + err.Error())
		return nil
	}
	m.items, m.tools, m.prompts, m.ctxUsed, m.first = nil, map[string]*item{}, nil, 0, 0
	m.notice("conversation cleared")
	return nil
}

func (m *Model) cmdCompact(arg string) tea.Cmd {
	c, ok := m.b.(Compactor)
	if !ok {
		m.notice(unavailable("/compact"))
		return nil
	}
	m.hint = "compacting…"
	return later("compacted", func(ctx context.Context) error { return c.Compact(ctx, arg) })
}

func (m *Model) cmdRename(arg string) tea.Cmd {
	t, ok := m.b.(Titler)
	switch {
	case !ok:
		m.notice(unavailable("/rename"))
	case arg == "":
		m.notice("usage: /rename TITLE")
	default:
		return later("named this session "+strconv.Quote(arg), func(ctx context.Context) error { return t.SetTitle(ctx, arg) })
	}
	return nil
}

func (m *Model) cmdMCP(arg string) tea.Cmd {
	if sub, name, _ := strings.Cut(arg, " "); sub == "login" {
		return m.loginMCP(strings.TrimSpace(name))
	}
	m.listMCP()
	return nil
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
	return later("signed in to "+name, func(ctx context.Context) error { return l.LoginMCP(ctx, name) })
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
		fmt.Fprintf(&b, "\n  %-13s %s", c.name, c.desc)
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

func (m *Model) cmdPlan(string) tea.Cmd {
	if err := m.b.SetPermissionMode(keel.ModePlan); err != nil {
		m.errorf("could not switch to plan mode: " + err.Error())
		return nil
	}
	m.notice("plan mode: the agent reads and plans, and asks before it changes anything (shift+tab leaves it)")
	return m.refreshStatusLine()
}

// cmdCopy puts the newest answer on the clipboard with the terminal's OSC 52 sequence, which
// works over ssh and in tmux (set-clipboard on).
func (m *Model) cmdCopy(string) tea.Cmd {
	for i := len(m.items) - 1; i >= 0; i-- {
		if it := m.items[i]; it.kind == kindAssistant && strings.TrimSpace(it.text) != "" {
			m.notice(fmt.Sprintf("copied the last answer (%d characters)", len(it.text)))
			return tea.SetClipboard(it.text)
		}
	}
	m.notice("no answer to copy yet")
	return nil
}
