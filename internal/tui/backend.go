// Package tui is keel's interactive terminal frontend on Bubble Tea: it renders the events a
// session streams, answers its permission asks and offers the slash commands. It holds no
// agent logic; everything goes through [Backend], which *keel.Session satisfies, and through
// the optional interfaces below, found by type assertion, for what the root API may or may
// not offer in a given build.
package tui

import (
	"context"
	"io"
	"iter"
	"time"

	"github.com/keel-dev/keel"
)

// Backend is the session the UI drives.
type Backend interface {
	Send(ctx context.Context, prompt string) iter.Seq2[keel.Event, error]
	ID() string
	Model() string
	SetModel(model string)
	PermissionMode() keel.PermissionMode
	SetPermissionMode(mode keel.PermissionMode) error
	Usage() (keel.Usage, float64)
	Cwd() string
}

// SessionInfo describes a stored session for the resume picker.
type SessionInfo struct {
	ID          string
	Title       string
	FirstPrompt string
	Branch      string // the git branch it was started on, if known
	Modified    time.Time
	Size        int64 // bytes of transcript
	Messages    int
}

// SessionLister lists recent sessions, newest first.
type SessionLister interface {
	ListSessions() ([]SessionInfo, error)
}

// Resumer switches the backend to a stored session's conversation.
type Resumer interface {
	Resume(ctx context.Context, sessionID string) error
}

// Titler names the session (/rename), so --resume finds it by that title.
type Titler interface {
	SetTitle(ctx context.Context, title string) error
}

// Rewinder rewinds to just before the user message toUUID: files (code), history
// (conversation) or both.
type Rewinder interface {
	Rewind(ctx context.Context, toUUID string, code, conversation bool) error
}

// ContextReporter measures what the next request would carry, by part (/context, and the
// status line's figure for a resumed conversation before its first request).
type ContextReporter interface {
	ContextUsage(ctx context.Context) keel.ContextUsage
}

// Compactor summarises the conversation to free context; instructions may steer the summary.
type Compactor interface {
	Compact(ctx context.Context, instructions string) error
}

// Clearer starts a fresh conversation in the same session settings.
type Clearer interface {
	Clear(ctx context.Context) error
}

// Noticer hands over the notices found while the session opened, before the first prompt.
type Noticer interface {
	Notices() []keel.Notice
}

// MCPServer is one MCP server and its connection status.
type MCPServer struct {
	Name, Status string
}

// MCPStatuser reports the MCP servers.
type MCPStatuser interface {
	MCPServers() []MCPServer
}

// MCPLoginer signs the user in to an OAuth-protected MCP server anew.
type MCPLoginer interface {
	LoginMCP(ctx context.Context, name string) error
}

// AgentInfo is one agent definition.
type AgentInfo struct {
	Name, Description, Color string
}

// AgentLister lists the agent definitions.
type AgentLister interface {
	Agents() []AgentInfo
}

// MemoryFile is one loaded memory file (KEEL.md, CLAUDE.md, AGENTS.md).
type MemoryFile struct {
	Path, Scope string
}

// MemoryLister lists the memory files in the system prompt.
type MemoryLister interface {
	MemoryFiles() []MemoryFile
}

// SkillLister lists the skills; those the user can invoke are offered in `/` completion.
type SkillLister interface {
	Skills() []keel.SkillInfo
}

// SkillReloader reads the skills and commands from disk again (/skills reload).
type SkillReloader interface {
	ReloadSkills(ctx context.Context) error
}

// Backgrounder moves the running foreground subagents to the background.
type Backgrounder interface {
	Background(ctx context.Context) error
}

// Reporter is a session whose background agents report between turns: the UI shows their
// events as they happen and, when the main agent is idle, gives it a turn for the reports
// that wait for it.
type Reporter interface {
	PendingReports() int
	SendPending(ctx context.Context) iter.Seq2[keel.Event, error]
	OnIdleEvents(fn func(keel.Event))
}

// TeamMember is one member of the session's agent team.
type TeamMember struct {
	Name, Color, State, Task, Runner, AgentID string
}

// TeamTask is one task of the team's board.
type TeamTask struct {
	ID, Subject, Status, Owner string
	BlockedBy                  []string
}

// Teamer is a session with an agent team: the UI shows its members and board, lets the
// user view a teammate's work and message it, and wakes the lead when teammates write.
type Teamer interface {
	TeamName() string
	TeamMembers(ctx context.Context) []TeamMember
	TeamTasks(ctx context.Context) []TeamTask
	MessageTeammate(ctx context.Context, to, text string) error
	TeamUnread(ctx context.Context) int
	// SendPending gives the lead a turn for the teammates' messages waiting for it.
	SendPending(ctx context.Context) iter.Seq2[keel.Event, error]
	// OnIdleEvents makes teammates' events between turns reach fn as they happen.
	OnIdleEvents(fn func(keel.Event))
}

// Doctorer checks what the session depends on (/doctor).
type Doctorer interface {
	Doctor(ctx context.Context) []keel.Check
}

// ModelSwitcher lists the models and switches to one it knows (/model).
type ModelSwitcher interface {
	Models() []keel.ModelInfo
	SwitchModel(ctx context.Context, name string) error
}

// RuleEditor lists, adds and removes permission rules (/permissions).
type RuleEditor interface {
	PermissionRules() []keel.PermissionRule
	AddPermissionRule(behavior, rule string) error
	RemovePermissionRule(behavior, rule string) error
}

// HookLister lists the configured hooks (/hooks).
type HookLister interface {
	Hooks() []keel.Hook
}

// TodoLister is the main agent's todo list (/todos).
type TodoLister interface {
	Todos() []keel.Todo
}

// ShellLister lists and stops the background shells (/bashes).
type ShellLister interface {
	Shells() []keel.Shell
	KillShell(id string) error
}

// StyleSwitcher lists and switches output styles (/config).
type StyleSwitcher interface {
	OutputStyles() []keel.OutputStyle
	OutputStyle() string
	SetOutputStyle(ctx context.Context, name string) error
}

// StatusLiner is the statusLine setting; SetStatusLine keeps a new command in the user's
// settings (/statusline).
type StatusLiner interface {
	StatusLine() keel.StatusLine
	SetStatusLine(command string) error
}

// SettingsReporter says which settings files were read and what is wrong in them (/status,
// /config).
type SettingsReporter interface {
	SettingsFiles() []keel.SettingsFile
	SettingsProblems() []keel.Notice
}

// Exporter writes the conversation as Markdown (/export, /bug).
type Exporter interface {
	Export(ctx context.Context, w io.Writer) error
}
