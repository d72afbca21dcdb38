// Package skill discovers skills (SKILL.md folders) and custom slash commands (markdown files),
// lists them to the model by name and description only, and expands one into its full text
// when the model calls the Skill tool or the user types /name args.
//
// Progressive disclosure is the point of the package: the system prompt carries one line per
// skill (see [Catalog.Listing]); a skill's body is read from disk only when it is invoked, so a
// hundred installed skills cost a hundred short lines, not a hundred documents.
//
// # Sources and precedence
//
// Entries are gathered from these places, lowest priority first; a later entry with the same
// name replaces an earlier one (and remembers the paths it overrode):
//
//  1. bundled skills, embedded in keel; then the enabled plugins' commands and skills, named
//     plugin:entry;
//  2. ~/.claude/commands, then ~/.claude/skills (Claude Code's user level);
//  3. $KEEL_HOME/commands, then $KEEL_HOME/skills;
//  4. for every directory from the project root down to the working directory:
//     .claude/commands, .claude/skills, then .keel/commands, .keel/skills;
//  5. MCP prompts, as mcp__server__prompt (namespaced, so they never collide).
//
// So the closer a definition is to the working directory, the more it wins; the project beats
// the user; at the same level keel's directory beats Claude Code's, and a skill beats a command
// of the same name (as in Claude Code). Claude Code itself lets personal skills beat project
// ones; keel departs from that on purpose: a project that ships a skill expects it to run.
package skill

import (
	"context"
	"fmt"
	"strings"
)

// Kind says what an entry was loaded from.
type Kind string

// Entry kinds.
const (
	KindSkill     Kind = "skill"
	KindCommand   Kind = "command"
	KindMCPPrompt Kind = "mcp-prompt"
)

// Source is where an entry was found, as shown by `keel skills`.
type Source string

// Sources, lowest priority first.
const (
	SourceBundled       Source = "bundled"
	SourcePlugin        Source = "plugin"
	SourceClaudeUser    Source = "claude-user"
	SourceUser          Source = "user"
	SourceClaudeProject Source = "claude-project"
	SourceProject       Source = "project"
	SourceMCP           Source = "mcp"
)

// Context says where a skill runs: inline in the current loop, or in a forked subagent.
type Context string

// The two contexts; the zero value means inline.
const (
	ContextInline Context = "inline"
	ContextFork   Context = "fork"
)

// DefaultAgent runs fork skills that name no agent.
const DefaultAgent = "general-purpose"

// Skill is one invocable entry: a skill, a custom command or an MCP prompt. The body is not
// part of it; [Catalog.Invoke] reads it when the entry is used.
type Skill struct {
	// Name is what the model passes to the Skill tool and the user types after "/".
	Name        string
	Description string
	Kind        Kind
	Source      Source
	// Path is the file the entry came from ("bundled/<name>/SKILL.md" for bundled skills,
	// "mcp:<server>/<prompt>" for MCP prompts).
	Path string
	// Dir is the skill's base directory; files beside SKILL.md are read relative to it. Empty
	// for commands, bundled skills and MCP prompts.
	Dir string
	// AllowedTools are permission rules granted without asking while the skill runs (see
	// [Skill.Grants]: an untrusted project's skill grants nothing).
	AllowedTools []string
	// Untrusted is set on the entries of a workspace the user has not trusted
	// ([Options.UntrustedProject]): their "!" shell lines are not run, their allowed-tools
	// grant nothing, and their @file mentions stay inside the project.
	Untrusted bool
	// Model overrides the model while the skill runs; "" or "inherit" keeps the current one.
	Model   string
	Context Context
	// Agent is the agent type a fork skill runs as; "" means [DefaultAgent].
	Agent        string
	ArgumentHint string
	// DisableModelInvocation hides the entry from the model's listing; the Skill tool refuses it.
	DisableModelInvocation bool
	// UserInvocable is false when the entry is meant only for the model (hidden from /name).
	UserInvocable bool
	// Extra holds frontmatter keys keel does not use (hooks, license, metadata, …), unchanged.
	Extra map[string]any `json:"-"`
	// Overrides lists the paths of lower-priority entries of the same name, highest first.
	Overrides []string
	// Plugin names the plugin a SourcePlugin entry came from.
	Plugin string `json:"-"`

	// hasDescription is false when Description was derived from the body.
	hasDescription bool
	// read returns the body (frontmatter removed); nil for MCP prompts.
	read func() (string, error)
	// prompt is the MCP prompt behind an mcp-prompt entry.
	prompt *PromptInfo
	// pluginVars replaces a plugin's ${CLAUDE_PLUGIN_ROOT} and ${CLAUDE_PLUGIN_DATA} in its body.
	pluginVars *strings.Replacer
}

// Grants returns the allowed-tools the skill grants while it runs: none for an untrusted
// project's skill, whose file anyone who cloned the repository could have written.
func (s Skill) Grants() []string {
	if s.Untrusted {
		return nil
	}
	return s.AllowedTools
}

// ModelInvocable reports whether the model may load the entry through the Skill tool, which
// is also whether the listing shows it. MCP prompts are user-only (servers come and go, the
// listing is memoized); so is a command without a written description: its stand-in
// description is its first body line, and the listing carries no body text (as in Claude Code).
func (s Skill) ModelInvocable() bool {
	return !s.DisableModelInvocation && s.Kind != KindMCPPrompt && (s.Kind == KindSkill || s.hasDescription)
}

// Problem is something wrong with one file. Skipped problems dropped the entry; the others
// are warnings about an entry that still loaded.
type Problem struct {
	Path    string
	Line    int
	Msg     string
	Skipped bool
}

// Error formats the problem as path:line: message.
func (p Problem) Error() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.Path, p.Line, p.Msg)
	}
	return fmt.Sprintf("%s: %s", p.Path, p.Msg)
}

// ForkRunner runs a fork-context skill as a subagent and returns its final text. The session
// implements it over the Agent machinery; agentType is the skill's agent or [DefaultAgent],
// allowedTools its allowed-tools (nil: the agent's own tools), model "" to inherit.
type ForkRunner interface {
	RunFork(ctx context.Context, agentType, prompt string, allowedTools []string, model string) (string, error)
}

// PromptSource lists the prompts of connected MCP servers and renders one. mcphost
// implements it; the listing may change between calls as servers come and go.
type PromptSource interface {
	Prompts() []PromptInfo
	GetPrompt(ctx context.Context, server, name string, args map[string]string) (string, error)
}

// PromptInfo is one MCP prompt.
type PromptInfo struct {
	Server      string
	Name        string
	Description string
	Arguments   []PromptArgument
}

// PromptArgument is one declared argument of an MCP prompt.
type PromptArgument struct {
	Name        string
	Description string
	Required    bool
}

// mcpName is the command name of an MCP prompt: mcp__server__prompt, with characters outside
// [a-zA-Z0-9_-] replaced by "_" as for MCP tool names.
func mcpName(server, prompt string) string {
	return "mcp__" + normalize(server) + "__" + normalize(prompt)
}

func normalize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, s)
}
