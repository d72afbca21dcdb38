package subagent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/keel-dev/keel/internal/effort"

	"github.com/keel-dev/keel/internal/agentdef"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/mcphost"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/skill"
	"github.com/keel-dev/keel/internal/tool"
)

// EffortBudget is the thinking budget of a definition's effort: the level's (see package
// effort) or the integer as written; 0 for none.
func EffortBudget(e agentdef.Effort) int64 {
	if e.Tokens > 0 {
		return int64(e.Tokens)
	}
	b, _ := effort.Budget(e.Level)
	return b
}

// thinkingHeadroom is what a reply keeps beyond the thinking budget when the agent's
// max_tokens would not leave room for it.
const thinkingHeadroom = 4096

// MemoryLines is how much of an agent's MEMORY.md joins its system prompt.
const MemoryLines = 200

// MemoryDir returns the memory directory of the agent name for scope: user memory under
// keel's home ($KEEL_HOME/agent-memory/<name>), project memory in the project
// (.keel/agent-memory/<name>, meant to be committed) and local memory beside it
// (.keel/agent-memory-local/<name>, kept out of git).
func MemoryDir(scope agentdef.MemoryScope, name, home, projectDir string) (string, error) {
	name = safeName(name)
	switch scope {
	case agentdef.MemoryUser:
		if home == "" {
			return "", errors.New("memory: user needs keel's home directory, and this session has none")
		}
		return filepath.Join(home, "agent-memory", name), nil
	case agentdef.MemoryProject, agentdef.MemoryLocal:
		if projectDir == "" {
			return "", fmt.Errorf("memory: %s needs a project directory", scope)
		}
		sub := "agent-memory"
		if scope == agentdef.MemoryLocal {
			sub = "agent-memory-local"
		}
		return filepath.Join(projectDir, ".keel", sub, name), nil
	}
	return "", fmt.Errorf("memory %q is not one of: user, project, local", scope)
}

// safeName makes an agent name (which may carry a plugin prefix) one path element.
func safeName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '-'
	}, strings.TrimLeft(name, "."))
}

// agentMemory is what an agent's memory adds to its child: a system-prompt section and the
// rules that let it read and write the directory without asking.
type agentMemory struct {
	dir   string
	text  string
	rules []permission.Rule
}

// openMemory creates the memory directory (a local one also gets a .gitignore that keeps
// it out of git) and reads the head of its MEMORY.md — unless refused, the agent's checker's
// [permission.Checker.ReadFilter] (nil: none) refuses it: a repository may ship a project's
// MEMORY.md as a link to a file a Read deny rule keeps from the model.
func openMemory(def *agentdef.Definition, home, projectDir string, refused func(path string) string) (*agentMemory, error) {
	dir, err := MemoryDir(def.Memory, def.Name, home, projectDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	if def.Memory == agentdef.MemoryLocal {
		ignore := filepath.Join(filepath.Dir(dir), ".gitignore")
		if _, err := os.Stat(ignore); errors.Is(err, os.ErrNotExist) {
			if err := os.WriteFile(ignore, []byte("# keel: local agent memory, not for version control\n*\n"), 0o644); err != nil {
				return nil, fmt.Errorf("memory: %w", err)
			}
		}
	}
	index := filepath.Join(dir, "MEMORY.md")
	why := ""
	if _, err := os.Stat(index); err == nil && refused != nil {
		why = refused(index)
	}
	head := ""
	if why == "" {
		if head, err = readHead(index, MemoryLines); err != nil {
			return nil, fmt.Errorf("memory: %w", err)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Agent memory\n\nYou have a persistent memory directory at %s (%s scope). Read, Write and Edit work there without asking. "+
		"Keep what later runs of this agent should know — conventions, decisions, pitfalls — in MEMORY.md, concise and current; "+
		"put details in other files there and link them from MEMORY.md.\n\n", dir, def.Memory)
	switch {
	case why != "":
		b.WriteString("MEMORY.md is not read: " + why + ".")
	case head == "":
		b.WriteString("MEMORY.md is empty: nothing has been recorded yet.")
	default:
		fmt.Fprintf(&b, "Contents of MEMORY.md (first %d lines):\n\n%s", MemoryLines, head)
	}
	pattern := "//" + strings.TrimLeft(filepath.ToSlash(dir), "/") + "/**"
	rules, errs := permission.ParseRules([]string{"Read(" + pattern + ")", "Write(" + pattern + ")", "Edit(" + pattern + ")"},
		permission.Allow, permission.Source{Name: "agent memory", Path: def.Path})
	if len(errs) > 0 {
		return nil, fmt.Errorf("memory rules: %w", errors.Join(errs...))
	}
	return &agentMemory{dir: dir, text: b.String(), rules: rules}, nil
}

// refusal is the first reason of checks to refuse a file, or "" when none does; nil checks
// are skipped.
func refusal(checks ...func(path string) string) func(path string) string {
	return func(path string) string {
		for _, c := range checks {
			if c == nil {
				continue
			}
			if why := c(path); why != "" {
				return why
			}
		}
		return ""
	}
}

// readHead returns the first n lines of path; a missing file is empty.
func readHead(path string, n int) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for len(lines) < n && sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return strings.TrimSpace(strings.Join(lines, "\n")), sc.Err()
}

// withSection appends a named block to what a system function renders.
func withSection(sys func(context.Context) loop.System, name, text string) func(context.Context) loop.System {
	return func(ctx context.Context) loop.System {
		s := sys(ctx)
		s.Blocks = append(append([]provider.SystemBlock(nil), s.Blocks...), provider.SystemBlock{Text: text})
		s.Names = append(append([]string(nil), s.Names...), name)
		return s
	}
}

// SkillSource expands skills by name; *skill.Catalog satisfies it.
type SkillSource interface {
	Invoke(ctx context.Context, name, args string, by skill.Invoker, cwd string) (skill.Invocation, error)
}

// preloadSkills expands the skills a definition lists into blocks for the child's first
// message, so it starts knowing them instead of having to invoke them.
func (r *Runner) preloadSkills(ctx context.Context, def *agentdef.Definition, cwd string) ([]message.Block, error) {
	if len(def.Skills) == 0 {
		return nil, nil
	}
	if r.cfg.Skills == nil {
		return nil, fmt.Errorf("skills %v: this session has no skills", def.Skills)
	}
	var out []message.Block
	for _, name := range def.Skills {
		inv, err := r.cfg.Skills.Invoke(ctx, name, "", skill.ByUser, cwd)
		if err != nil {
			return nil, fmt.Errorf("preload skill %s: %w", name, err)
		}
		out = append(out, message.Text(fmt.Sprintf("<skill name=%q>\n%s\n</skill>", name, strings.TrimSpace(inv.Text))))
	}
	return out, nil
}

// MCPStarter starts the MCP servers a definition configures inline, for one child's
// lifetime; the session implements it over mcphost. def says where they come from (a
// project's agent runs its servers only in a trusted workspace).
type MCPStarter interface {
	StartServers(ctx context.Context, def *agentdef.Definition, servers []agentdef.MCPServer) (ChildMCP, error)
}

// ChildMCP is a child's own MCP servers; *mcphost.Manager satisfies it.
type ChildMCP interface {
	Tools(ctx context.Context) []tool.Tool
	Close() error
}

// mcpNames returns the normalized names of the servers a definition lists, inline or not;
// nil when it lists none (the child keeps every MCP tool of its parent).
func mcpNames(def *agentdef.Definition) []string {
	var names []string
	for _, s := range def.MCPServers {
		names = append(names, mcphost.Normalize(s.Name))
	}
	return names
}

// inlineServers returns the servers a definition configures itself.
func inlineServers(def *agentdef.Definition) []agentdef.MCPServer {
	var out []agentdef.MCPServer
	for _, s := range def.MCPServers {
		if s.Config != nil {
			out = append(out, s)
		}
	}
	return out
}

// agentHooks compiles the hooks of a definition. They are active only while that agent runs;
// a Stop hook there means the agent's own end, so it runs as SubagentStop (as in Claude
// Code).
func (r *Runner) agentHooks(def *agentdef.Definition) (hooks.EventRunner, error) {
	if len(def.Hooks) == 0 {
		return nil, nil
	}
	var events map[string][]struct {
		Matcher string                 `json:"matcher"`
		Hooks   []settings.HookCommand `json:"hooks"`
	}
	if err := json.Unmarshal(def.Hooks, &events); err != nil {
		return nil, fmt.Errorf("hooks of agent %s: %w", def.Name, err)
	}
	scope := settings.ScopeUser
	switch def.Source {
	case agentdef.SourceProject:
		scope = settings.ScopeProject
	case agentdef.SourceCLI:
		scope = settings.ScopeCLI
	case agentdef.SourceManaged:
		scope = settings.ScopeManaged
	}
	from := settings.Origin{Scope: scope, Path: def.Path}
	var groups []settings.HookGroup
	for ev, list := range events {
		if ev == string(hooks.Stop) {
			ev = string(hooks.SubagentStop)
		}
		for _, g := range list {
			for i := range g.Hooks {
				g.Hooks[i].From = from
			}
			groups = append(groups, settings.HookGroup{Event: ev, Matcher: g.Matcher, Hooks: g.Hooks, From: from})
		}
	}
	warn := func(text string) {
		r.emit(event.Notice{Level: "warn", Text: fmt.Sprintf("agent %s: %s", def.Name, text)})
	}
	runner, problems := hooks.New(hooks.Config{Hooks: groups, ProjectDir: r.cfg.ProjectDir, Trusted: r.cfg.TrustedHooks,
		Traceparent: r.cfg.Seams.Traceparent, Report: warn, Logger: r.logger})
	for _, p := range problems {
		r.logger.Warn("agent hooks", "agent", def.Name, "problem", p.Error())
		warn(p.Error())
	}
	return runner, nil
}
