// Package agentdef reads agent definitions: markdown files with YAML frontmatter (the body is
// the system prompt), JSON objects (the CLI's --agents flag), and the agent files of other
// harnesses (Claude Code, Gemini CLI, Codex, opencode), mapped field by field. It validates every
// field, merges the sources by precedence and says which definition overrides which. It does not
// run agents: the subagent package does.
//
// Real files are messy, so the reader is forgiving where it can be and strict where it must:
// invalid YAML falls back to a line parser, tool lists are accepted in every shape people write,
// unknown keys are kept, and model names pass through; a value that would change what an agent
// may do (a permission mode, a turn limit, a memory scope) is rejected with the file, the line
// and the valid values. One bad file never hides the others.
//
// Precedence, lowest first (a later definition of a name overrides an earlier one): built-in,
// plugin (named "<plugin>:<agent>"), user, project, the --agents flag, managed policy. Within
// the user source the folders are read in the order ~/.config/opencode/agent(s), ~/.codex,
// ~/.gemini/agents, ~/.claude/agents, $KEEL_HOME/agents; within the project source
// .opencode/agent(s), .codex, .gemini/agents, .claude/agents (recursively), .keel/agents. So
// keel's own folder always wins, and .claude wins over the other harnesses because its format
// is keel's and maps without loss, while the others lose fields in translation. A built-in
// overridden by a file keeps nothing of the built-in (not even one-shot).
package agentdef

import (
	"encoding/json"
	"fmt"

	"github.com/keel-dev/keel/internal/permission"
)

// Definition is one agent definition after parsing and validation. The zero value of each
// optional field means "not set": the runtime applies its default (for Model, inherit the
// parent's model).
type Definition struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Prompt is the system prompt: the markdown body, the JSON "prompt", or Codex's
	// developer_instructions.
	Prompt string `json:"prompt,omitempty"`
	// Tools is the allow-list. nil (the key is absent) and ["*"] both mean every tool of the
	// filtered pool; an empty, non-nil list means no tools at all. Entries are tool names or
	// permission-rule patterns such as "Bash(git add:*)" and "mcp__github__*"; names keel does
	// not know are kept, because a tool may come from an MCP server or a later version.
	Tools []string `json:"tools"`
	// DisallowedTools are removed after Tools is applied; "*" removes everything.
	DisallowedTools []string `json:"disallowedTools,omitempty"`
	// Model is an alias (sonnet, opus, haiku), a full model id, "inherit", or any other name,
	// passed through unvalidated: new aliases appear faster than keel releases.
	Model          string         `json:"model,omitempty"`
	PermissionMode PermissionMode `json:"permissionMode,omitempty"`
	// MaxTurns limits the agent's model turns; 0 means the runtime's default.
	MaxTurns      int         `json:"maxTurns,omitempty"`
	Effort        Effort      `json:"effort,omitzero"`
	Background    bool        `json:"background,omitempty"`
	InitialPrompt string      `json:"initialPrompt,omitempty"`
	Skills        []string    `json:"skills,omitempty"`
	Memory        MemoryScope `json:"memory,omitempty"`
	Isolation     Isolation   `json:"isolation,omitempty"`
	MCPServers    []MCPServer `json:"mcpServers,omitempty"`
	// Hooks is the hooks configuration as written (the shape of settings' "hooks" key), checked
	// only for its outline; the hooks package interprets it.
	Hooks json.RawMessage `json:"hooks,omitempty"`
	// Color is one of [Colors] or a "#RRGGBB" hex colour.
	Color string `json:"color,omitempty"`
	// OmitMemory asks that memory files (KEEL.md, CLAUDE.md, …) be left out of the agent's
	// context.
	OmitMemory bool `json:"omitMemory,omitempty"`
	// OneShot agents report once and are never messaged again, so their result carries no
	// agent id or follow-up trailer. Only built-ins set it.
	OneShot bool `json:"oneShot,omitempty"`
	// Permissions holds per-agent permission rules, in keel's rule syntax; only opencode files
	// carry them today.
	Permissions *Rules `json:"permissions,omitempty"`
	// Extra holds the keys keel does not use, as decoded, so nothing the author wrote is lost.
	Extra map[string]any `json:"extra,omitempty"`

	Source Source `json:"source"`
	// Plugin names the plugin a SourcePlugin definition came from.
	Plugin string `json:"plugin,omitempty"`
	Format Format `json:"format"`
	// Path is the file the definition came from; empty for built-ins, "--agents" for the CLI.
	Path string `json:"path,omitempty"`
}

// Rules are permission rules in keel's syntax ("Bash(rm -rf *)", "Edit(**/*.env)", "Bash").
type Rules struct {
	Allow []string `json:"allow,omitempty"`
	Ask   []string `json:"ask,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// MCPServer names an MCP server the agent needs. Config is nil for a reference to a server
// configured elsewhere, or the inline configuration as written (the shape of one .mcp.json
// entry, with "type" filled in), which the MCP package connects.
type MCPServer struct {
	Name   string          `json:"name"`
	Config json.RawMessage `json:"config,omitempty"`
}

// Effort is a reasoning-effort level or an explicit thinking budget in tokens; at most one of
// the two is set.
type Effort struct {
	Level  string // one of [effort.Levels]
	Tokens int
}

// IsZero reports whether no effort was set.
func (e Effort) IsZero() bool { return e.Level == "" && e.Tokens == 0 }

// MarshalJSON writes the level as a string or the budget as a number, as in frontmatter.
func (e Effort) MarshalJSON() ([]byte, error) {
	if e.Level != "" {
		return json.Marshal(e.Level)
	}
	return json.Marshal(e.Tokens)
}

func (e Effort) String() string {
	if e.Level != "" {
		return e.Level
	}
	if e.Tokens > 0 {
		return fmt.Sprint(e.Tokens)
	}
	return ""
}

// PermissionMode is the permission mode an agent runs in: [permission.Mode], whose
// constants these are, so a definition's mode and the session's are one type with one list.
type PermissionMode = permission.Mode

// The permission modes an agent definition may name.
const (
	ModeDefault           = permission.ModeDefault
	ModeAcceptEdits       = permission.ModeAcceptEdits
	ModePlan              = permission.ModePlan
	ModeDontAsk           = permission.ModeDontAsk
	ModeBypassPermissions = permission.ModeBypassPermissions
	ModeAuto              = permission.ModeAuto
	ModeBubble            = permission.ModeBubble
)

// MemoryScope selects the agent's memory directory, to which it gets read/write/edit access.
type MemoryScope string

// The memory scopes.
const (
	MemoryUser    MemoryScope = "user"
	MemoryProject MemoryScope = "project"
	MemoryLocal   MemoryScope = "local"
)

// Isolation says where the agent's work happens.
type Isolation string

// IsolationWorktree runs the agent in its own git worktree.
const IsolationWorktree Isolation = "worktree"

// ModelInherit is the Model value that means "the parent's model".
const ModelInherit = "inherit"

// The valid values, in the order error messages list them.
var (
	PermissionModes = []PermissionMode{ModeDefault, ModeAcceptEdits, ModePlan, ModeDontAsk, ModeBypassPermissions, ModeAuto, ModeBubble}
	MemoryScopes    = []MemoryScope{MemoryUser, MemoryProject, MemoryLocal}
	Isolations      = []Isolation{IsolationWorktree}
	Colors          = []string{"red", "blue", "green", "yellow", "purple", "orange", "pink", "cyan"}
)

// Source is where a definition came from. Sources are ordered: a later one overrides an
// earlier one of the same name.
type Source string

// The sources, lowest precedence first.
const (
	SourceBuiltin Source = "built-in"
	SourcePlugin  Source = "plugin"
	SourceUser    Source = "user"
	SourceProject Source = "project"
	SourceCLI     Source = "cli"
	SourceManaged Source = "managed"
)

// Format says which harness's file format a definition was read from, and so which mapping
// was applied. Claude Code's format is keel's own.
type Format string

// The formats.
const (
	FormatKeel     Format = "keel"
	FormatGemini   Format = "gemini"
	FormatCodex    Format = "codex"
	FormatOpencode Format = "opencode"
)

// Severity grades a [Diagnostic].
type Severity string

// Severities: an error drops the definition, a warning keeps it.
const (
	SeverityWarning Severity = "warning"
	SeverityError   Severity = "error"
)

// Diagnostic is a problem found in one file. Line is 1-based, or 0 when the problem concerns
// the whole file.
type Diagnostic struct {
	Path     string   `json:"path"`
	Line     int      `json:"line,omitempty"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
}

// Error formats the diagnostic as "path:line: message", so it can be returned as an error.
func (d Diagnostic) Error() string {
	if d.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", d.Path, d.Line, d.Message)
	}
	return fmt.Sprintf("%s: %s", d.Path, d.Message)
}
