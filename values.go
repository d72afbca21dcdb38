package keel

import (
	"encoding/json"
	"fmt"
)

// PermissionMode is the session-wide stance that decides a tool call no rule settles.
type PermissionMode string

// The permission modes.
const (
	// ModeDefault allows reads inside the working directories and asks for edits and shell
	// commands no allow rule covers.
	ModeDefault PermissionMode = "default"
	// ModeAcceptEdits also allows edits inside the working directories.
	ModeAcceptEdits PermissionMode = "acceptEdits"
	// ModePlan allows only read-only tools until the plan is approved.
	ModePlan PermissionMode = "plan"
	// ModeDontAsk denies whatever would otherwise be asked.
	ModeDontAsk PermissionMode = "dontAsk"
	// ModeBypassPermissions allows everything except what deny and ask rules name.
	ModeBypassPermissions PermissionMode = "bypassPermissions"
	// ModeAuto decides like default, and lets a classifier settle what default would ask.
	ModeAuto PermissionMode = "auto"
)

// Provider is the model API a session talks to.
type Provider string

// The providers.
const (
	// ProviderAnthropic is the Anthropic Messages API (the default).
	ProviderAnthropic Provider = "anthropic"
	// ProviderOpenAI is any OpenAI-compatible chat completions server (Ollama, vLLM,
	// llama.cpp…).
	ProviderOpenAI Provider = "openai"
)

// TeammateMode is where agent teammates run.
type TeammateMode string

// The teammate modes.
const (
	TeammateInProcess TeammateMode = "in-process"
	// TeammateProcess and TeammateTmux run each teammate as a process of its own (in a tmux
	// pane with tmux); they need [Options].TeammateCommand.
	TeammateProcess TeammateMode = "process"
	TeammateTmux    TeammateMode = "tmux"
	// TeammateAuto picks tmux panes inside tmux, else in-process.
	TeammateAuto TeammateMode = "auto"
)

// AgentDef is an agent definition the Agent tool can start by name (subagent_type), as an
// agent file's frontmatter or Claude Code's --agents JSON says it. Description and Prompt
// are required.
type AgentDef struct {
	// Description says when to use the agent; the model reads it.
	Description string `json:"description"`
	// Prompt is the agent's system prompt.
	Prompt string `json:"prompt"`
	// Tools and DisallowedTools narrow the agent's tools ("*" is all of them).
	Tools           []string `json:"tools,omitempty"`
	DisallowedTools []string `json:"disallowedTools,omitempty"`
	// Model is a model id, an alias, or "inherit" (the default): the caller's model.
	Model string `json:"model,omitempty"`
	// PermissionMode is the agent's mode; empty takes its parent's.
	PermissionMode PermissionMode `json:"permissionMode,omitempty"`
	// MaxTurns caps the agent's model turns; 0 means keel's default.
	MaxTurns int `json:"maxTurns,omitempty"`
	// Effort is a reasoning-effort level (low, medium, high, xhigh, max): a thinking budget
	// on the agent's requests.
	Effort string `json:"effort,omitempty"`
	// Background runs the agent as a background task every time.
	Background bool `json:"background,omitempty"`
	// InitialPrompt opens the agent's first message; Skills are preloaded into it.
	InitialPrompt string   `json:"initialPrompt,omitempty"`
	Skills        []string `json:"skills,omitempty"`
	// Memory gives the agent a memory directory: user, project or local.
	Memory string `json:"memory,omitempty"`
	// Isolation "worktree" runs the agent in a git worktree of its own.
	Isolation string `json:"isolation,omitempty"`
	// Color is the agent's colour in UIs.
	Color string `json:"color,omitempty"`
}

// agentsJSON is defs in the --agents JSON form the session reads.
func agentsJSON(defs map[string]AgentDef) (string, error) {
	if len(defs) == 0 {
		return "", nil
	}
	b, err := json.Marshal(defs)
	if err != nil {
		return "", fmt.Errorf("keel.Options.Agents: %w", err)
	}
	return string(b), nil
}
