package subagent

import (
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/keel-dev/keel/internal/tool"
)

// Tool names the filter knows by name.
const (
	ToolName        = "Agent"
	LegacyToolName  = "Task"
	ExitPlanMode    = "ExitPlanMode"
	EnterPlanMode   = "EnterPlanMode"
	AskUserQuestion = "AskUserQuestion"
	TaskOutput      = "TaskOutput"
	TaskStop        = "TaskStop"
)

// AllAgentsDisallowed are the tools no subagent gets: waiting on and stopping tasks (the
// parent owns them), plan-mode switches and questions to the user (a subagent has no user),
// and the Agent tool itself (no nesting unless the depth limit allows it).
var AllAgentsDisallowed = []string{TaskOutput, ExitPlanMode, EnterPlanMode, ToolName, AskUserQuestion, TaskStop}

// CustomAgentDisallowed are removed for agents that are not built in, on top of
// AllAgentsDisallowed: a user-written agent may not steer other agents.
var CustomAgentDisallowed = []string{"SendMessage"}

// BackgroundAllowed is all a background agent keeps (MCP tools aside): it runs unattended,
// so only tools that need no one's attention.
var BackgroundAllowed = []string{
	"Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "Glob", "Grep", "LS",
	"Bash", "BashOutput", "KillShell", "WebFetch", "WebSearch", "TodoWrite",
	"Skill", "ToolSearch", "EnterWorktree", "ExitWorktree",
}

// Filter says how to narrow a pool for one agent.
type Filter struct {
	// Main is the main thread, which is never filtered.
	Main bool
	// Builtin is false for agents defined by users, plugins or policy.
	Builtin bool
	// Background agents keep only BackgroundAllowed.
	Background bool
	// PlanMode keeps ExitPlanMode, so a planning agent can finish its plan.
	PlanMode bool
	// AllowAgent keeps the Agent tool (the depth limit allows one more level).
	AllowAgent bool
	// Tools is the definition's allow-list: nil or ["*"] keep the whole filtered pool. Entries
	// may be permission-rule patterns ("Bash(git:*)" keeps Bash) or globs over MCP names
	// ("mcp__github__*").
	Tools []string
	// Disallowed is removed last; "*" removes everything.
	Disallowed []string
	// MainAgent is the main thread running as an agent (keel --agent): only Tools and
	// Disallowed apply.
	MainAgent bool
	// MCPServers, when not nil, are the only MCP servers (normalized names) whose tools pass:
	// the definition's mcpServers.
	MCPServers []string
	// Teammate keeps SendMessage for custom agents too: talking is a teammate's job.
	Teammate bool
}

// Apply returns the tools of p that f lets through, in p's order: MCP
// tools always pass the agent blacklists; the plan-exit tool passes in plan mode; then the
// all-agents and custom-agent blacklists; then a background agent's allow-list; then the
// definition's tools (with * expanding to the whole filtered pool) and disallowedTools.
func (f Filter) Apply(p *tool.Pool) *tool.Pool {
	if f.Main {
		return p
	}
	var kept []tool.Tool
	for _, t := range p.Tools() {
		if (f.MainAgent || f.passes(t.Name())) && f.listed(t.Name()) {
			kept = append(kept, t)
		}
	}
	return tool.Assemble(kept, nil)
}

func (f Filter) passes(name string) bool {
	if name == LegacyToolName {
		name = ToolName
	}
	switch {
	case tool.IsMCP(name):
		return f.MCPServers == nil || slices.ContainsFunc(f.MCPServers, func(s string) bool { return strings.HasPrefix(name, tool.MCPPrefix+s+"__") })
	case name == ExitPlanMode && f.PlanMode:
		return true
	case name == ToolName && f.AllowAgent:
	case slices.Contains(AllAgentsDisallowed, name):
		return false
	}
	if !f.Builtin && !f.Teammate && slices.Contains(CustomAgentDisallowed, name) {
		return false
	}
	if f.Background && !slices.Contains(BackgroundAllowed, name) && name != ToolName {
		return false
	}
	return true
}

func (f Filter) listed(name string) bool {
	if f.Tools != nil && !slices.Contains(f.Tools, "*") && !matchAny(f.Tools, name) {
		return false
	}
	return !slices.Contains(f.Disallowed, "*") && !matchAny(f.Disallowed, name)
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		base, _, _ := strings.Cut(strings.TrimSpace(p), "(")
		if base == LegacyToolName {
			base = ToolName
		}
		if base == name {
			return true
		}
		if strings.ContainsAny(base, "*?[") {
			if ok, _ := doublestar.Match(base, name); ok {
				return true
			}
		}
		// "mcp__server" names every tool of that server, as in permission rules.
		if tool.IsMCP(base) && strings.Count(base, "__") == 1 && strings.HasPrefix(name, base+"__") {
			return true
		}
	}
	return false
}
