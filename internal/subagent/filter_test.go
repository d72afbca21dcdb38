package subagent

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/tool"
)

func named(name string) tool.Tool {
	return tool.New(tool.Spec[struct{}]{Name: name, Description: name, Schema: json.RawMessage(`{"type":"object"}`),
		Run: func(context.Context, *tool.Env, struct{}) tool.Result { return tool.Text(name) }})
}

func pool(names ...string) *tool.Pool {
	var ts []tool.Tool
	for _, n := range names {
		ts = append(ts, named(n))
	}
	return tool.Assemble(ts, nil)
}

func TestFilter(t *testing.T) {
	full := pool("Read", "Edit", "Bash", "Agent", "TaskOutput", "TaskStop", "ExitPlanMode", "EnterPlanMode",
		"AskUserQuestion", "SendMessage", "WebFetch", "Skill", "CronCreate", "mcp__github__create_issue", "mcp__slack__post")
	tests := []struct {
		name   string
		filter Filter
		want   []string
	}{
		{"main thread is never filtered", Filter{Main: true, Tools: []string{"Read"}},
			full.Names()},
		{"built-in agent: all-agents blacklist incl. Agent; MCP passes", Filter{Builtin: true},
			[]string{"Read", "Edit", "Bash", "SendMessage", "WebFetch", "Skill", "CronCreate", "mcp__github__create_issue", "mcp__slack__post"}},
		{"custom agent: custom blacklist too", Filter{},
			[]string{"Read", "Edit", "Bash", "WebFetch", "Skill", "CronCreate", "mcp__github__create_issue", "mcp__slack__post"}},
		{"plan mode keeps the plan-exit tool", Filter{Builtin: true, PlanMode: true},
			[]string{"Read", "Edit", "Bash", "ExitPlanMode", "SendMessage", "WebFetch", "Skill", "CronCreate", "mcp__github__create_issue", "mcp__slack__post"}},
		{"background allow-list; MCP passes", Filter{Builtin: true, Background: true},
			[]string{"Read", "Edit", "Bash", "WebFetch", "Skill", "mcp__github__create_issue", "mcp__slack__post"}},
		{"star expands to the filtered pool", Filter{Tools: []string{"*"}},
			[]string{"Read", "Edit", "Bash", "WebFetch", "Skill", "CronCreate", "mcp__github__create_issue", "mcp__slack__post"}},
		{"explicit list; rule patterns and MCP globs", Filter{Tools: []string{"Read", "Bash(git status:*)", "mcp__github__*", "TaskOutput"}},
			[]string{"Read", "Bash", "mcp__github__create_issue"}},
		{"MCP server name selects its tools", Filter{Tools: []string{"mcp__slack"}},
			[]string{"mcp__slack__post"}},
		{"empty list means no tools", Filter{Tools: []string{}},
			nil},
		{"disallowed removed after the list", Filter{Tools: []string{"*"}, Disallowed: []string{"Bash", "mcp__slack__*"}},
			[]string{"Read", "Edit", "WebFetch", "Skill", "CronCreate", "mcp__github__create_issue"}},
		{"disallowed star removes everything", Filter{Disallowed: []string{"*"}},
			nil},
		{"definition's mcpServers: only those servers' MCP tools", Filter{Builtin: true, MCPServers: []string{"slack"}},
			[]string{"Read", "Edit", "Bash", "SendMessage", "WebFetch", "Skill", "CronCreate", "mcp__slack__post"}},
		{"main thread as an agent: only its lists apply", Filter{MainAgent: true, Disallowed: []string{"Bash"}},
			[]string{"Read", "Edit", "Agent", "TaskOutput", "TaskStop", "ExitPlanMode", "EnterPlanMode", "AskUserQuestion", "SendMessage", "WebFetch", "Skill", "CronCreate", "mcp__github__create_issue", "mcp__slack__post"}},
		{"nesting allowed keeps Agent (legacy Task in the list)", Filter{Builtin: true, AllowAgent: true, Tools: []string{"Task", "Read"}},
			[]string{"Read", "Agent"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.filter.Apply(full).Names()
			if len(got) == 0 {
				got = nil
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
