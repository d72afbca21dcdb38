// Package session is the composition root of one conversation: it owns the history, the
// transcript, settings, the permission context, the tool pool and the stores, and runs the
// main agent's loop for each prompt. The CLI, the TUI and the root package are its clients.
package session

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"log/slog"
	"sync"

	"github.com/keel-dev/keel/internal/background"
	"github.com/keel-dev/keel/internal/inspect"
	"github.com/keel-dev/keel/internal/maincompact"
	"github.com/keel-dev/keel/internal/mainworktree"
	"github.com/keel-dev/keel/internal/pluginset"
	"github.com/keel-dev/keel/internal/sandbox"
	"github.com/keel-dev/keel/internal/sessionhooks"
	"github.com/keel-dev/keel/internal/sessionlog"
	"github.com/keel-dev/keel/internal/settingsedit"
	"github.com/keel-dev/keel/internal/teamopen"

	"github.com/keel-dev/keel/internal/agentdef"
	"github.com/keel-dev/keel/internal/builtin"
	"github.com/keel-dev/keel/internal/cachewatch"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/lsp"
	"github.com/keel-dev/keel/internal/mcphost"
	"github.com/keel-dev/keel/internal/memory"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/prompt"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/shell"
	"github.com/keel-dev/keel/internal/skillset"
	"github.com/keel-dev/keel/internal/snapshot"
	"github.com/keel-dev/keel/internal/subagent"
	"github.com/keel-dev/keel/internal/switchset"
	"github.com/keel-dev/keel/internal/team"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/toolsearch"
	"github.com/keel-dev/keel/internal/transcript"
	"github.com/keel-dev/keel/internal/undo"
)

// Session is one conversation. Send may not be called concurrently; other methods may.
type Session struct {
	id     string
	opts   Options
	logger *slog.Logger

	projectDir string
	// plan is what the main agent was told about plan mode (planmode.go).
	plan planState
	// conf builds the parts from the options and settings (config.go).
	conf     configWiring
	settings *settings.Settings
	hooks    *hooks.Runner
	memory   *memory.Set
	prompt   *prompt.Builder
	ttl      provider.TTLPolicy
	checker  *permission.Checker
	watch    *cachewatch.Watcher
	// protected are the paths edits ask about and the sandbox keeps read-only, read once
	// (protectedPaths).
	protectedOnce sync.Once
	protected     []string
	// notices are configuration problems found while opening, reported with the first Send.
	notices []event.Notice
	// transcript is nil when nothing is persisted; snapshots likewise.
	transcript *transcript.Writer
	snapshots  *snapshot.Store

	files     *tool.FileState
	validator *tool.Validator
	builtins  []tool.Tool
	jobs      *shell.Jobs
	// sandbox runs Bash's commands and skills' shell lines; nil when off (sandbox.go).
	sandbox *sandbox.Sandbox
	todos   *builtin.Todos
	mcp     *mcphost.Manager
	// nativeSearch: the provider searches deferred tools itself (provider.NativeToolSearcher);
	// else search and searchTool are keel's ToolSearch over the deferred tools.
	nativeSearch bool
	search       *toolsearch.Searcher
	searchTool   tool.Tool
	// lsp runs the language servers of the lspServers settings; nil when none are set.
	lsp *lsp.Manager

	// mu guards history, state and busy.
	mu      sync.Mutex
	history []message.Message
	// uuids are the transcript entry ids of history, index for index.
	uuids []string
	// touched are paths tools used since the last request, for path-scoped rules.
	touched []string
	// startContext is what SessionStart hooks added, for the first prompt.
	startContext []string
	state        tool.State
	busy         bool
	// acct is what the session's requests used and cost (accounting.go).
	acct accounts
	// cacheTotals are the watcher's totals at the end of the last Send.
	cacheTotals cachewatch.Totals
	// cacheSafe is what the main agent's newest turn sent (for forks and helpers).
	cacheSafe *loop.CacheSafe
	// sink receives the events of the Send in progress; nil between Sends.
	sink *chanSink
	// agents runs subagents and background tasks (agents.go).
	agents *Agents
	// mainAgent is the definition the main thread runs as (Options.Agent); initialSent says
	// its initialPrompt was used.
	mainAgent   *agentdef.Definition
	initialSent bool
	// sdk is the state of the Send in progress (turn.go); watched the files FileChanged
	// hooks watch (filewatch.go); servers the MCP servers as they are driven (mcp.go).
	sdk     sdkState
	watched fileWatch
	servers *MCP
	// config is the settings and permission rules as frontends change them (settings.go).
	config *settingsedit.Configuration
	// plug is the loaded plugins (plugins.go, internal/pluginset).
	plug *pluginset.Set
	// hookd fires the session's hook events (hooks.go, hookevents.go).
	hookd *sessionhooks.Dispatcher
	// teams is the session's agent team (team.go); nil until Open has built it.
	teams *teamopen.Handle
	// switches are the model, output style and thinking switches (model.go,
	// internal/switchset).
	switches *switchset.Switches
	// closers release what Open started for the session (the supervisor's client, the
	// telemetry exporter).
	closers []func() error
	// tel exports the session's telemetry (telemetry.go); nil while it is off.
	tel telemetryLink
	// compaction compacts the main thread and runs /compact, /clear and /add-dir (compact.go,
	// internal/maincompact).
	compaction *maincompact.Compaction
	// sk loads, expands and reloads skills and commands (skills.go, internal/skillset).
	sk *skillset.Set
	// persist records the transcript (persist.go, internal/sessionlog).
	persist Persistence
	// insp is what frontends read of the session, and the auto memory (inspect.go,
	// internal/inspect).
	insp *inspect.Inspector
	// undo is the rewind of files, shell effects and conversation (rewind.go, internal/undo);
	// nil until the transcript opened.
	undo *undo.Undo
	// wtree is the worktree the main session works in (worktree.go, internal/mainworktree);
	// nil until the transcript opened.
	wtree *mainworktree.Main
}

// ErrBusy is returned when Send is called while another Send runs.
var ErrBusy = errors.New("session is busy with another prompt")

// PermissionMode returns the main agent's permission mode.
func (s *Session) PermissionMode() string { return string(s.checker.Policy().Mode) }

// ID returns the session id.
func (s *Session) ID() string { return s.id }

// Cwd returns the session's current working directory.
func (s *Session) Cwd() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.Cwd
}

// History returns a copy of the conversation so far.
func (s *Session) History() []message.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]message.Message(nil), s.history...)
}

// Notices returns the notices found while opening the session (settings problems, MCP servers
// that did not start, a repaired transcript) and clears them, so the next Send does not
// repeat them. A frontend that shows a screen before the first prompt calls it at start.
func (s *Session) Notices() []event.Notice { return s.takeNotices() }

func (s *Session) takeNotices() []event.Notice {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.notices
	s.notices = nil
	return n
}

// Usage returns the tokens used by every Send so far and the price of those whose model has a
// known price (see [Session.Ledger] for which).
func (s *Session) Usage() (message.Usage, float64) {
	s.acct.mu.Lock()
	defer s.acct.mu.Unlock()
	u, usd, _, _ := s.acct.ledger.Total()
	return u, usd
}

// Settle adds to res — the newest result, held back by a headless run until its team and
// background agents settled — what they used after it was made, so the last result line
// carries every request of the run. It reports whether res changed.
func (s *Session) Settle(res *event.Result) bool { return s.acct.settle(res) }

// currentPrompt is the prompt of the Send in progress.
func (s *Session) currentPrompt() string {
	s.sdk.mu.Lock()
	defer s.sdk.mu.Unlock()
	return s.sdk.prompt
}

// currentTurn names the Send in progress.
func (s *Session) currentTurn() string {
	s.sdk.mu.Lock()
	defer s.sdk.mu.Unlock()
	return s.sdk.turn
}

func (s *Session) acquire() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.busy {
		return false
	}
	s.busy = true
	return true
}

func (s *Session) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.busy = false
}

// cacheSafeNow returns what the main agent's newest completed turn sent, or nil.
func (s *Session) cacheSafeNow() *loop.CacheSafe {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cacheSafe
}

// The types of the session's parts stand here, beside Session: most hold the session they are
// part of and the session holds each, so no other file could hold them without the two files
// using each other. Their methods live in the files of their concerns, above this one. A part
// that moved to a package of its own (toolgate, skillset, sessionlog, sessionhooks, pluginset,
// switchset, undo, inspect, mainworktree, maincompact) is wired in a file of its concern and holds no session.

// Agents is the session's part of the agent machinery: the task registry, the main thread's
// notification queue and the subagent runner, whose Agent, SendMessage, TaskOutput and
// TaskStop tools join the built-ins. [Session.Agents] returns it; a UI and a controlling
// program move agents to the background, wait for them, stop and continue them through it.
type Agents struct {
	tasks  *background.Registry
	queue  *background.Queue
	runner *subagent.Runner
	// detached says the session was opened to run one detached agent (a supervisor job).
	detached bool
	// team is the session's team, nil without one; teamWait waits for it as WaitBackground
	// does (zero without one).
	team     func() *team.Team
	teamWait func(ctx context.Context) (int, error)
	// send gives the main thread a turn (Session.Send): the background reports' turn.
	send   func(ctx context.Context, prompt string) iter.Seq2[event.Event, error]
	logger *slog.Logger

	// mu guards held and idle: background work emits from its own goroutines.
	mu sync.Mutex
	// held are events of background work that happened between Sends (a task finishing),
	// replayed at the start of the next one.
	held []event.Event
	// idle, if set, receives the events of background work between Sends instead.
	idle func(event.Event)
}

// Persistence is the session's transcript as it records it (internal/sessionlog): entries
// and metadata recorded, the title set, the history read back with its entry ids. Opening
// and replaying the transcript (persist.go) take the session's state up, and stay there.
type Persistence struct {
	// log records the entries; nil until the transcript opened, and with persistence off.
	log *sessionlog.Log
	// entries is the history with its entry ids, read under the session's lock.
	entries func() ([]message.Message, []string)
}

// chanSink forwards a run's events to the Send iterator and records its messages in the
// transcript. One run owns it.
type chanSink struct {
	s  *Session
	ch chan<- sinkEvent
	// uuids are the entry ids of the messages appended during the run, in order.
	uuids []string
	// replaced is set when compaction replaced the history: uuids then start at the boundary.
	replaced bool

	// mu guards closed and sends on ch: background agents emit from their own goroutines and
	// may finish just as the run ends.
	mu     sync.Mutex
	closed bool
}

// sinkEvent is an event of a run on its way to its Send; observed says telemetry saw it
// already (background work's events between Sends are observed as they happen).
type sinkEvent struct {
	e        event.Event
	observed bool
}

// configWiring turns the session's options and settings into its parts while it opens:
// settings, the permission policy, trust, hooks, the prompt and the cache policy. It
// assigns the parts it builds to the session, hence s.
type configWiring struct {
	s *Session
	// trustOnce decides isTrusted (see trusted).
	trustOnce sync.Once
	isTrusted bool
}

// planState remembers what the main agent was last told about plan mode.
type planState struct {
	// mu guards told.
	mu   sync.Mutex
	told bool // the current plan mode was announced
}

// sdkState is the state of the Send in progress that the SDK's options and requests reach:
// its prompt and turn id, its cancel and its structured answer.
type sdkState struct {
	// mu guards cancel and the structured answer of the run in progress.
	mu         sync.Mutex
	structured json.RawMessage
	reminders  int
	// cancel interrupts the Send in progress (an answer that denies and interrupts).
	cancel context.CancelCauseFunc
	// prompt is the prompt of the Send in progress, for auto mode's classifier; turn names
	// it for hooks.
	prompt, turn string
}
