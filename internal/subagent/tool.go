package subagent

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/keel-dev/keel/internal/agentdef"
	"github.com/keel-dev/keel/internal/prompt"
	"github.com/keel-dev/keel/internal/team"
	"github.com/keel-dev/keel/internal/tool"
)

// Input is the Agent tool's input, with Claude Code's field names.
type Input struct {
	Description     string `json:"description"`
	Prompt          string `json:"prompt"`
	SubagentType    string `json:"subagent_type,omitempty"`
	Model           string `json:"model,omitempty"`
	RunInBackground bool   `json:"run_in_background,omitempty"`
	Isolation       string `json:"isolation,omitempty"`
	// Name spawns a teammate of that name (teams only); TeamName is accepted as in Claude
	// Code; Mode is the teammate's permission mode.
	Name     string `json:"name,omitempty"`
	TeamName string `json:"team_name,omitempty"`
	Mode     string `json:"mode,omitempty"`
	// Items fans the task out: one agent per item, {{item}} in the prompt replaced.
	Items []string `json:"items,omitempty"`
}

// Output is the structured result of an Agent call (hooks' tool_response, UIs).
type Output struct {
	Status       string `json:"status"` // completed, async_launched, interrupted, error
	AgentID      string `json:"agentId,omitempty"`
	TaskID       string `json:"taskId,omitempty"`
	AgentType    string `json:"agentType"`
	Prompt       string `json:"prompt"`
	Content      string `json:"content,omitempty"`
	Model        string `json:"resolvedModel,omitempty"`
	DurationMS   int64  `json:"totalDurationMs"`
	TotalTokens  int64  `json:"totalTokens"`
	ToolUseCount int    `json:"totalToolUseCount"`
	Worktree     string `json:"worktreePath,omitempty"`
	Branch       string `json:"worktreeBranch,omitempty"`
}

const agentSchema = `{"type":"object","properties":{` +
	`"description":{"type":"string","description":"A short (3-5 word) description of the task"},` +
	`"prompt":{"type":"string","description":"The task for the agent to perform"},` +
	`"subagent_type":{"type":"string","description":"The agent type, from the listing"},` +
	`"model":{"type":"string","description":"A model alias (opus, sonnet, haiku, fable) or id; default: the agent's own, else yours"},` +
	`"run_in_background":{"type":"boolean","description":"Return at once; you are notified when the agent finishes"},` +
	`"isolation":{"type":"string","enum":["worktree"],"description":"Run the agent in its own git worktree, kept and reported if it has changes"},` +
	`"items":{"type":"array","items":{"type":"string"},"description":"Fan out: one agent per item ({{item}} in prompt replaced), one summary back"}},` +
	`"required":["description","prompt"],"additionalProperties":false}`

// teamSchema is the Agent tool's schema when the session has a team: name, team_name and
// mode spawn a teammate.
const teamSchema = `{"type":"object","properties":{` +
	`"description":{"type":"string","description":"A short (3-5 word) description of the task"},` +
	`"prompt":{"type":"string","description":"The task for the agent to perform"},` +
	`"subagent_type":{"type":"string","description":"The agent type, from the listing"},` +
	`"model":{"type":"string","description":"A model alias (sonnet, opus, haiku) or id; default: the agent's own, else yours"},` +
	`"run_in_background":{"type":"boolean","description":"Return at once; you are notified when the agent finishes"},` +
	`"isolation":{"type":"string","enum":["worktree"],"description":"Run the agent in its own git worktree, kept and reported if it has changes"},` +
	`"name":{"type":"string","description":"Spawn a teammate with this name instead of a one-shot subagent: it keeps running, takes tasks from the team's board and is reached with SendMessage"},` +
	`"team_name":{"type":"string","description":"The team to spawn the teammate in (this session's team)"},` +
	`"mode":{"type":"string","enum":["default","acceptEdits","plan","dontAsk","bypassPermissions"],"description":"The teammate's permission mode (default: yours)"}},` +
	`"required":["description","prompt"],"additionalProperties":false}`

// Tool returns the Agent tool bound to this runner. One value serves every agent: the caller
// is found through env.AgentID. Its description names no agent type: the types are announced
// in a message ([Runner.AgentTypes]), so a definition that comes or goes mid-session leaves
// the cached tool list alone.
func (r *Runner) Tool() tool.Tool {
	return tool.New(tool.Spec[Input]{
		Name:              ToolName,
		Description:       r.description(),
		Schema:            json.RawMessage(r.agentSchema()),
		IsConcurrencySafe: tool.Always[Input],
		Run: func(ctx context.Context, env *tool.Env, in Input) tool.Result {
			return r.Call(ctx, env, in)
		},
	})
}

func (r *Runner) agentSchema() string {
	if r.cfg.Teams {
		return teamSchema
	}
	return agentSchema
}

func (r *Runner) description() string {
	var b strings.Builder
	b.WriteString("Launches an agent that carries out a complex, multi-step task on its own, with its type's tools and instructions " +
		"(types: in a system reminder).\n" +
		"- Give a short description and a complete, self-contained prompt: the agent does not see this conversation.\n" +
		"- Its final message comes back to you, not to the user: summarise what matters.\n" +
		"- With run_in_background: true the call returns at once and you are notified when the agent finishes; do not poll it.\n" +
		"- An agent that returned an agentId can be continued with SendMessage, keeping its context.\n")
	if r.cfg.Teams {
		b.WriteString("- With a name the agent is a teammate: it runs on alongside you in its own context, works through the team's task board (TaskCreate, TaskList), and you talk with it through SendMessage. Spawn teammates for parallel, long-running work; plain subagents for one-shot questions.\n")
	}
	if r.cfg.Forks {
		b.WriteString("- Without subagent_type the agent is a fork of you: it inherits this whole conversation, so the prompt is a directive, not a briefing.\n")
	}
	return b.String()
}

// AgentTypes lists the agent definitions the Agent tool can start, in the set's stable order,
// with their descriptions and tools, for the session to announce.
func (r *Runner) AgentTypes() []prompt.Entry {
	var out []prompt.Entry
	for _, d := range r.cfg.Defs.Agents() {
		out = append(out, prompt.Entry{Name: d.Name, Description: oneLine(d.Description) + " (Tools: " + toolList(d) + ")"})
	}
	return out
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func toolList(d *agentdef.Definition) string {
	if d.Tools == nil || (len(d.Tools) == 1 && d.Tools[0] == "*") {
		if len(d.DisallowedTools) > 0 {
			return "all but " + strings.Join(d.DisallowedTools, ", ")
		}
		return "*"
	}
	if len(d.Tools) == 0 {
		return "none"
	}
	return strings.Join(d.Tools, ", ")
}

// Call runs one Agent call for the agent env.AgentID names.
func (r *Runner) Call(ctx context.Context, env *tool.Env, in Input) tool.Result {
	if in.Name != "" {
		tm := r.team()
		if tm == nil {
			return tool.Errorf("name spawns a teammate, and agent teams are off in this session (enable them with the teams setting or CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1)")
		}
		return tm.Spawn(ctx, env.AgentID, team.SpawnInput{Name: in.Name, TeamName: in.TeamName, Prompt: in.Prompt, Description: in.Description,
			SubagentType: in.SubagentType, Model: in.Model, Isolation: in.Isolation, Mode: in.Mode})
	}
	if len(in.Items) > 0 {
		return r.fanOut(ctx, env, in)
	}
	parent := r.node(env.AgentID)
	if parent == nil {
		return tool.Errorf("agent %s cannot start subagents here", env.AgentID)
	}
	if in.Isolation != "" && in.Isolation != string(agentdef.IsolationWorktree) {
		return tool.Errorf("isolation %q is not one of: worktree", in.Isolation)
	}
	spec := spawn{parent: parent, in: in, toolUseID: env.ToolUseID}
	switch {
	case in.SubagentType == "" && r.cfg.Forks:
		if parent.forked() {
			return tool.Errorf("Fork is not available inside a forked agent: you are already a fork. Do the work directly.")
		}
		spec.fork = true
		spec.def = forkDefinition()
	case in.SubagentType == "":
		def, ok := r.cfg.Defs.Get("general-purpose")
		if !ok {
			return tool.Errorf("subagent_type is required: forks are off and there is no general-purpose agent. Available agents: %s", r.available())
		}
		spec.def = def
	default:
		def, ok := r.cfg.Defs.Get(in.SubagentType)
		if !ok {
			return tool.Errorf("Agent type '%s' not found. Available agents: %s", in.SubagentType, r.available())
		}
		spec.def = def
	}
	if !spec.fork && parent.depth+1 > r.cfg.MaxDepth {
		return tool.Errorf("Subagents cannot start further subagents (depth limit %d). Do the work directly.", r.cfg.MaxDepth)
	}
	return r.launch(ctx, spec)
}
