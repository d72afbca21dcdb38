// Package subagent runs child agents on the same loop as the main thread: subagents of a
// definition (internal/agentdef), fork children that inherit the parent's conversation and
// prompt cache, and background agents that report through the task registry. It owns the
// Agent tool (legacy name Task) and SendMessage, which continues a subagent from its
// transcript.
//
// # Child context
//
// A child starts from clones of its parent's file-read state, with fresh denial tracking, its
// own cancellation (a background child outlives the turn that started it), no UI of its own
// (its events go to the parent's stream with its origin) and the session's task registry.
//
// # Permissions
//
// A child's rights are its own rules — its parent's rules plus the definition's — intersected
// with its parent's ceiling ([permission.Checker.Child] over [permission.Intersect]): anything
// the parent would ask or
// deny is asked or denied for the child too, so a child never gets more than its parent, and a
// restrictive child stays restricted under a permissive parent, because its own mode and rules
// still apply. A definition without permissionMode, and every fork, runs in bubble mode: it
// takes the parent's mode. A child's questions go to the parent's asker — the terminal, the
// stream-json control channel or the parent's own parent — labelled with the child's name and
// colour ([permission.AgentInfo]). Worktree-isolated children have the worktree as their only
// working directory.
//
// # Definition fields acted on at start
//
//   - memory (user, project, local): the agent gets a directory — $KEEL_HOME/agent-memory/<name>,
//     .keel/agent-memory/<name> or .keel/agent-memory-local/<name> (with a .gitignore) — whose
//     MEMORY.md (first [MemoryLines] lines) joins its system prompt, and allow rules for Read,
//     Write and Edit there. keel grants them itself ([permission.Checker.Grant]), so they hold
//     under the parent's ceiling too; the parent's deny and ask rules still win.
//   - skills: each named skill is expanded and put before the task in the first message.
//   - mcpServers: only the listed servers' MCP tools reach the child; inline configurations
//     are started for the child ([MCPStarter]) and stopped when it ends.
//   - hooks: run with the session's for the child's tool calls; a Stop hook there runs as
//     SubagentStop. They are not active for any other agent.
//   - effort: a thinking budget on the child's requests, the level's from package effort (low
//     2048 … max 31999 tokens, as --effort) or the integer as written; max_tokens is raised
//     when it would not leave room for the budget.
//
// # Moving a foreground agent to the background
//
// [Runner.Background] detaches the foreground children an agent is waiting for (Ctrl+B in
// the terminal): their Agent calls return an async_launched receipt at once, and each child
// goes on as a background task whose result reaches the parent as a task notification.
//
// # Nesting
//
// The main thread is depth 0. A child at depth d may start its own children only when d <
// MaxDepth; by default MaxDepth is 1, so subagents do not nest. Fork children keep the Agent
// tool in their pool (removing it would change the cached prefix) but are refused when they
// try to fork again.
package subagent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"

	"github.com/keel-dev/keel/internal/agentdef"
	"github.com/keel-dev/keel/internal/background"
	"github.com/keel-dev/keel/internal/cachewatch"
	"github.com/keel-dev/keel/internal/clearing"
	"github.com/keel-dev/keel/internal/cost"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/team"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/worktree"
)

// DefaultMaxTurns caps a child's model turns when its definition sets no maxTurns.
const DefaultMaxTurns = 200

// Config is what a Runner needs from the session. Defs, Provider and Tasks are required.
type Config struct {
	Defs     *agentdef.Set
	Provider provider.Provider
	Tasks    *background.Registry
	// SessionID is the parent session's id; SessionPath its transcript. Subagent transcripts
	// go beside it (transcript.AgentPaths); empty keeps them in memory only.
	SessionID   string
	SessionPath string
	Version     string
	// Forks makes an Agent call without subagent_type a fork of the caller.
	Forks bool
	// MaxDepth is the deepest level of agents (main = 0); 0 means 1: subagents do not nest.
	MaxDepth int
	Hooks    hooks.EventRunner
	// HookInput fills the fields every hook input carries; nil leaves them empty.
	HookInput func(hooks.Input) hooks.Input
	// Gate builds a child's tool gate (PreToolUse hooks, permissions) over its checker; nil
	// checks permissions only. hooks is what the gate runs: the session's hooks joined with
	// the agent's own (its definition's hooks key).
	Gate func(checker *permission.Checker, origin event.Origin, hooks hooks.EventRunner) tool.Gate
	// ProjectDir is the project root (project and local agent memory, where the agent's hooks
	// run); Home is keel's directory (user agent memory). TrustedHooks runs the hooks of
	// project agents (the workspace is trusted).
	ProjectDir   string
	Home         string
	TrustedHooks bool
	// Masked says why the sandbox masks a file or the file it links to (filesystem.denyRead…),
	// or "" when it does not: an agent memory's MEMORY.md it masks is not read into the
	// prompt, as one the agent's Read rules cover is not. nil masks nothing.
	Masked func(path string) string
	// Skills expands the skills a definition preloads; MCP starts the servers a definition
	// configures inline. nil refuses such definitions with an error.
	Skills SkillSource
	MCP    MCPStarter
	// System renders a (non-fork) child's system prompt; nil uses the definition's prompt and
	// a short environment note.
	System func(ctx context.Context, def *agentdef.Definition, cwd string) loop.System
	// Prepare places cache breakpoints on a non-fork child's requests (their source is
	// "agent:<type>"); forks use their parent's.
	Prepare func(*provider.Request)
	// ResolveModel maps a model alias (sonnet, opus, haiku) to a model id; nil passes it on.
	ResolveModel func(string) string
	// Observers, if set, returns further observers for a child about to run with this pool
	// and this history (the session's announcer of agent types, skills and deferred tools,
	// which tells a fork child only what its inherited history does not already say).
	Observers func(pool func(context.Context) *tool.Pool, history []message.Message) []loop.Observer
	// Worktrees creates isolated worktrees; nil refuses isolation: worktree.
	Worktrees *worktree.Manager
	// Teams gives the Agent tool its name, team_name and mode fields and SendMessage its
	// structured messages; the team itself is attached with [Runner.SetTeam].
	Teams bool
	// Emit receives children's events; nil drops them. Called from children's goroutines.
	Emit   func(event.Event)
	Logger *slog.Logger
	// Detacher reaches the supervisor; with Detach, the main thread's new background agents
	// run there, so that they outlive this process (detach.go).
	Detacher Detacher
	Detach   bool
	// FanOut runs an Agent call with items: one agent per item, capped and resumable
	// (session.Session.FanOut); nil refuses items.
	FanOut func(ctx context.Context, in Input) tool.Result
	// Seams are what every agent gets from the session (agent.go).
	Seams Seams
}

// Parent is what a child inherits from the agent that starts it. The session fills one for
// the main thread with [Runner.SetMain]; the Runner makes one for every child.
type Parent struct {
	Model     string
	MaxTokens int64
	Thinking  *provider.Thinking
	// System renders the parent's system prompt (used to continue a fork in a new process,
	// before the parent has a turn to copy).
	System func(ctx context.Context) loop.System
	// Pool is the parent's whole pool; a child's is filtered from it.
	Pool    func(ctx context.Context) *tool.Pool
	Checker *permission.Checker
	Files   *tool.FileState
	State   func() tool.State
	Prepare func(*provider.Request)
	Source  string
}

// Runner starts, tracks and continues child agents of one session. It is safe for concurrent
// use: the Agent calls of one turn run in parallel.
type Runner struct {
	cfg    Config
	logger *slog.Logger

	// mu guards agents, done and ledger.
	mu     sync.Mutex
	agents map[string]*node
	// fg are the foreground children running, by the id of the agent that waits for them.
	fg map[string]map[*foreground]struct{}
	// done holds the definition and history of children that finished in this process, so
	// SendMessage continues them without a transcript.
	done   map[string]*record
	ledger cost.Ledger
	// remote are the agents handed to the supervisor (detach.go).
	remote map[string]bool
	// tm is the session's team, nil without one.
	tm Team
	// clearers are the stale-result clearers of agents whose cache watcher outlives them,
	// by watcher (guarded by mu).
	clearers map[*cachewatch.Watcher]*clearing.Clearer
}

// Team is what the runner needs from an agent team (*team.Team): Agent calls with a name
// spawn a teammate, and SendMessage reaches members by name.
type Team interface {
	Spawn(ctx context.Context, agentID string, in team.SpawnInput) tool.Result
	// Route delivers a message; false means to is no team recipient.
	Route(ctx context.Context, agentID, to string, message json.RawMessage, summary string) (tool.Result, bool)
}

// SetTeam attaches the session's team.
func (r *Runner) SetTeam(t Team) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tm = t
}

func (r *Runner) team() Team {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tm
}

// node is one live agent: the main thread ("") or a running child.
type node struct {
	id     string
	owner  string // the task owner id: background.MainOwner or the agent id
	parent *node
	def    *agentdef.Definition
	depth  int
	fork   bool
	p      Parent
	inbox  *inbox

	// mu guards lastReq, lastSys and lastReply.
	mu        sync.Mutex
	lastReq   *provider.Request
	lastSys   loop.System
	lastReply message.Message
}

type record struct {
	def     *agentdef.Definition
	fork    bool
	history []message.Message
	owner   string
	depth   int
}

// New makes a Runner; the session calls SetMain before the first request.
func New(cfg Config) *Runner {
	if cfg.Defs == nil || cfg.Provider == nil || cfg.Tasks == nil {
		panic("subagent.New: Defs, Provider and Tasks are required")
	}
	if cfg.MaxDepth <= 0 {
		cfg.MaxDepth = 1
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Runner{cfg: cfg, logger: logger, agents: map[string]*node{}, done: map[string]*record{}, remote: map[string]bool{},
		fg: map[string]map[*foreground]struct{}{}}
}

// SetMain registers the main thread as the parent of top-level Agent calls.
func (r *Runner) SetMain(p Parent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n, ok := r.agents[""]; ok {
		n.p = p
		return
	}
	r.agents[""] = &node{owner: background.MainOwner, p: p}
}

// AfterTurn returns the [loop.Agent.AfterTurn] hook of the agent with the given id ("" for
// the main thread): it keeps the cache-safe parameters of the last request, which a fork
// copies byte for byte.
func (r *Runner) AfterTurn(agentID string) func(req *provider.Request, sys loop.System, reply message.Message) {
	return func(req *provider.Request, sys loop.System, reply message.Message) {
		if n := r.node(agentID); n != nil {
			n.mu.Lock()
			n.lastReq, n.lastSys, n.lastReply = req, sys, reply
			n.mu.Unlock()
		}
	}
}

// Ledger returns, by model, what every child used so far, priced request by request; the
// session adds what grew during a run to that run's result (and its modelUsage).
func (r *Runner) Ledger() cost.Ledger {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ledger.Clone()
}

func (r *Runner) addUsage(l cost.Ledger) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ledger.Merge(l)
}

func (r *Runner) node(id string) *node {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.agents[id]
}

func (r *Runner) emit(e event.Event) {
	if r.cfg.Emit != nil {
		r.cfg.Emit(e)
	}
}

// newID returns an agent id in Claude Code's shape: "a" and 16 hex digits.
func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "a" + hex.EncodeToString(b[:])
}

// available lists the agents a caller may name, for error messages.
func (r *Runner) available() string {
	var names []string
	for _, d := range r.cfg.Defs.Agents() {
		names = append(names, d.Name)
	}
	return fmt.Sprint(names)
}
