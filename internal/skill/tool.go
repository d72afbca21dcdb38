package skill

import (
	"context"
	_ "embed"
	"strings"

	"github.com/keel-dev/keel/internal/tool"
)

// ToolName is the name the model calls, as in Claude Code.
const ToolName = "Skill"

//go:embed tool.md
var toolDescription string

const toolSchema = `{
  "type": "object",
  "properties": {
    "skill": {"type": "string", "description": "A listed skill's name, without a leading slash"},
    "args": {"type": "string", "description": "Free-text arguments"}
  },
  "required": ["skill"],
  "additionalProperties": false
}`

// ToolInput is the Skill tool's input: {"skill": "name", "args": "..."}.
type ToolInput struct {
	Skill string `json:"skill"`
	Args  string `json:"args,omitempty"`
}

// Outcome is the Skill tool's structured output (tool.Result.Output), for hooks, the UI and
// the session: which skill ran, how, and what it granted.
type Outcome struct {
	Skill   string  `json:"skill"`
	Context Context `json:"context"`
	// AllowedTools were added to the calling agent's Grants (inline skills only).
	AllowedTools []string `json:"allowedTools,omitempty"`
	// Model is the skill's model override, if any; the session may switch for the rest of the
	// turn.
	Model string `json:"model,omitempty"`
}

// ToolOptions configure the Skill tool.
type ToolOptions struct {
	// Runner runs fork skills; nil makes them fail with a clear result.
	Runner ForkRunner
	// Grants receives inline skills' allowed tools; nil drops them (every call asks).
	Grants *Grants
}

// Tool returns the Skill tool over c. An inline skill's expanded text is the tool result, so
// its instructions join the current loop only once the model asks for them; a fork skill runs
// through opts.Runner and its final text is the result.
func (c *Catalog) Tool(opts ToolOptions) tool.Tool {
	return tool.New(tool.Spec[ToolInput]{
		Name:        ToolName,
		Description: strings.TrimSpace(toolDescription),
		Schema:      []byte(toolSchema),
		// Loading instructions changes nothing; shell lines in a body pass AllowShell, and a
		// fork's tools pass the child's own permission checks.
		IsReadOnly: tool.Always[ToolInput],
		Run: func(ctx context.Context, env *tool.Env, in ToolInput) tool.Result {
			return c.callTool(ctx, env, in, opts)
		},
	})
}

func (c *Catalog) callTool(ctx context.Context, env *tool.Env, in ToolInput, opts ToolOptions) tool.Result {
	inv, err := c.Invoke(ctx, in.Skill, strings.TrimSpace(in.Args), ByModel, env.State.Cwd)
	if err != nil {
		return tool.Errorf("%v", err)
	}
	s := inv.Skill
	out := Outcome{Skill: s.Name, Context: s.Context, Model: s.Model}
	if inv.Fork {
		env.Progress("running skill " + s.Name + " as " + firstNonEmpty(s.Agent, DefaultAgent))
		text, err := RunFork(ctx, opts.Runner, inv)
		if err != nil {
			r := tool.Errorf("skill %s: %v", s.Name, err)
			r.Output = out
			return r
		}
		r := tool.Text(text)
		r.Output = out
		return r
	}
	if opts.Grants != nil && len(s.Grants()) > 0 {
		opts.Grants.Add(env.AgentID, s.Name, s.Grants())
		out.AllowedTools = s.Grants()
	}
	r := tool.Text(inv.Text)
	r.Output = out
	for _, run := range inv.Shell {
		if !run.Denied {
			r.Effects = append(r.Effects, "ran "+run.Command)
		}
	}
	return r
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
