// Package session is the composition root of one conversation: it owns the history, the
// transcript, settings, the permission context, the tool pool and the stores, and runs the
// main agent's loop for each prompt. The CLI, the TUI and the root package are its clients.
package session

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/keel-dev/keel/internal/sandbox"
	"github.com/keel-dev/keel/internal/settingsedit"
	"github.com/keel-dev/keel/internal/teamopen"
	"github.com/keel-dev/keel/internal/toolgate"

	"github.com/google/uuid"

	"github.com/keel-dev/keel/internal/agentdef"
	"github.com/keel-dev/keel/internal/builtin"
	"github.com/keel-dev/keel/internal/cachewatch"
	"github.com/keel-dev/keel/internal/cost"
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
	"github.com/keel-dev/keel/internal/skill"
	"github.com/keel-dev/keel/internal/snapshot"
	"github.com/keel-dev/keel/internal/subagent"
	"github.com/keel-dev/keel/internal/team"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/toolsearch"
	"github.com/keel-dev/keel/internal/transcript"
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
	skills       *skill.Catalog
	grants       *skill.Grants
	// forkRunner runs fork-context skills as subagents; nil until agents are wired.
	forkRunner skill.ForkRunner
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
	// plug is the loaded plugins (plugins.go).
	plug Plugins
	// hookd fires the session's hook events (hooks.go, hookevents.go).
	hookd hookDispatch
	// teams is the session's agent team (team.go); nil until Open has built it.
	teams *teamopen.Handle
	// idleEvents, if set, receives the events of background work between Sends (guarded by
	// mu); without it they are held for the next Send.
	idleEvents func(event.Event)
	// switches are the model, output style and thinking switches (model.go).
	switches Switches
	// closers release what Open started for the session (the supervisor's client, the
	// telemetry exporter).
	closers []func() error
	// tel exports the session's telemetry (telemetry.go); nil while it is off.
	tel telemetryLink
	// compaction compacts the main thread and runs /compact, /clear and /add-dir (compact.go).
	compaction compaction
	// sk loads, expands and reloads skills and commands (skills.go).
	sk Skills
	// persist opens, records and replays the transcript (persist.go).
	persist Persistence
	// insp is what frontends read of the session, and the auto memory (inspect.go).
	insp Inspector
	// undo is the rewind of files, shell effects and conversation (rewind.go, shadow.go).
	undo Undo
	// wtree is the worktree the main session works in (worktree.go).
	wtree mainWorktree
}

// ErrBusy is returned when Send is called while another Send runs.
var ErrBusy = errors.New("session is busy with another prompt")

// New opens a session. When a step fails, whatever the steps before it started (MCP
// servers, language servers, shell jobs, agents, the team, the transcript) is closed before
// it returns.
func New(ctx context.Context, opts Options) (_ *Session, err error) {
	if opts.Provider == nil {
		return nil, errors.New("session: no model provider configured")
	}
	cwd, err := resolveCwd(opts.Cwd)
	if err != nil {
		return nil, err
	}
	opts.Cwd = cwd
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	id := opts.SessionID
	if id == "" {
		id = uuid.NewString()
	}
	s := &Session{
		id:         id,
		opts:       opts,
		logger:     logger.With("session", id),
		projectDir: ProjectRoot(cwd),
		files:      tool.NewFileState(),
		validator:  tool.NewValidator(),
		state:      tool.State{Cwd: cwd},
		watch:      cachewatch.New(cachewatch.Options{Now: opts.Now}),
	}
	s.joinParts()
	defer func() {
		if err != nil {
			_ = s.shutdown()
		}
	}()
	s.sdk.thinking = initialThinking(opts.SDK)
	s.wrapFallback()
	if err := s.conf.loadSettings(); err != nil {
		return nil, err
	}
	s.plug.loadPlugins(ctx)
	policy, problems := s.conf.permissionPolicy()
	s.notices = append(s.notices, problems...)
	var asker permission.Asker = permission.Headless{}
	switch {
	case opts.MCP.PermissionPromptTool != "":
		asker = promptToolAsker{s, opts.MCP.PermissionPromptTool}
	case opts.Asker != nil:
		asker = opts.Asker
	}
	s.checker = permission.New(permission.Config{Policy: policy, Asker: notifyingAsker{s, asker}, Home: userHome(), Logger: s.logger, Classifier: autoClassifier{s}})
	s.state.AdditionalDirs = policy.Dirs[1:]
	s.config = s.conf.configuration()
	s.sandbox = s.buildSandbox()
	s.conf.buildHooks()
	s.conf.buildLSP()
	s.conf.buildCachePolicy()
	s.nativeSearch = provider.SupportsNativeToolSearch(opts.Provider)
	s.search = toolsearch.New()
	s.searchTool = s.search.Tool(s.deferredTools)
	if !opts.Offline {
		s.startMCP(ctx)
	}
	s.servers = s.newMCP()
	s.sk.loadSkills()
	s.forkRunner = agentForks{s}
	s.builtins = s.buildTools()
	st, err := s.persist.openTranscript(ctx)
	if err != nil {
		return nil, err
	}
	s.logger = logger.With("session", s.id)
	env := s.persist.restore(ctx, st)
	if err := s.persist.resumeAt(ctx); err != nil {
		return nil, err
	}
	s.teams = s.conf.team()
	s.buildAgents(ctx)
	s.buildCron(ctx)
	if st != nil {
		s.wtree.restoreWorktree(st)
	}
	if err := s.conf.openTeam(ctx, st != nil); err != nil {
		return nil, err
	}
	if err := s.applyMainAgent(); err != nil {
		return nil, err
	}
	s.conf.buildPrompt(ctx, env)
	s.undo.warmShadow()
	s.conf.untrustedNotice()
	s.notices = append(s.notices, s.teams.Resume(ctx)...)
	source := "startup"
	if st != nil {
		source = "resume"
	}
	if !opts.Offline {
		s.hookd.startHooks(ctx, source)
	}
	return s, nil
}

// joinParts connects the session's components to it: the accounts get what they read, the
// parts that wire the whole session their back-pointer.
func (s *Session) joinParts() {
	s.acct.maxBudget, s.acct.catalog = s.opts.SDK.MaxBudgetUSD, s.switches.models
	s.acct.agentLedger = func() cost.Ledger { return s.agents.agentLedger() }
	s.hookd.s, s.conf.s, s.plug.s, s.undo.s, s.switches.s = s, s, s, s, s
	s.insp.s, s.persist.s, s.sk.s, s.compaction.s, s.wtree.s = s, s, s, s, s
}

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

// ToolNames returns the names of the tools the main agent offers, in request order.
func (s *Session) ToolNames() []string { return s.pool(context.Background()).Names() }

// pool is the main agent's tools for the next request: built-ins and custom tools in their
// fixed order, the MCP resource tools, ToolSearch where the provider cannot search deferred
// tools itself, then the MCP tools of the current generation sorted by name. Deferred tools
// are in the pool (so filters, listings and calls see them); deferTools keeps their schemas
// out of the request.
func (s *Session) pool(ctx context.Context) *tool.Pool {
	return s.mainPlanFilter(s.agentPool(ctx))
}

// agentPool is the pool subagents are filtered from: the main agent's, with ExitPlanMode
// whatever the main agent's mode (a definition may run its agent in plan mode).
func (s *Session) agentPool(ctx context.Context) *tool.Pool {
	fixed := s.fixedTools()
	var mcpTools []tool.Tool
	if s.mcp != nil {
		mcpTools = s.mcp.Tools(ctx)
	}
	if !s.nativeSearch && len(s.deferredTools(ctx)) > 0 {
		fixed = append(fixed, s.searchTool)
	}
	return s.mainFilter(tool.Assemble(fixed, mcpTools))
}

// Send adds prompt to the conversation and runs the main agent until it is done. Events
// stream as they happen; the last one is an [event.Result]. Stopping the iteration early
// interrupts the run.
func (s *Session) Send(ctx context.Context, prompt string) iter.Seq2[event.Event, error] {
	return func(yield func(event.Event, error) bool) {
		if !s.acquire() {
			yield(nil, ErrBusy)
			return
		}
		defer s.release()
		tel := s.tel.Load() // nil-safe: telemetry off records nothing
		tel.Prompt(prompt)
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(loop.ErrInterrupted)
		s.sdk.setCancel(cancel)
		defer s.sdk.setCancel(nil)

		events := make(chan event.Event, 64)
		done := make(chan error, 1)
		sink := &chanSink{s: s, ch: events}
		s.mu.Lock()
		s.sink = sink
		s.mu.Unlock()
		go func() {
			defer sink.close()
			defer func() {
				s.mu.Lock()
				s.sink = nil
				s.mu.Unlock()
			}()
			done <- s.run(ctx, prompt, sink)
		}()
		stopped := false
		for e := range events {
			tel.Observe(e)
			if !stopped && !yield(e, nil) {
				stopped = true
				cancel(loop.ErrInterrupted)
			}
		}
		if err := <-done; err != nil && !stopped {
			yield(nil, err)
		}
	}
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

// run is one Send: the prompt joins the history, the main agent runs, the result is
// reported.
func (s *Session) run(ctx context.Context, prompt string, sink *chanSink) error {
	started := time.Now()
	s.beginRun(prompt)
	s.announce(ctx, sink)
	fail := func(err error) error {
		sink.Emit(event.Result{Subtype: "error_during_execution", IsError: true, Text: err.Error(), SessionID: s.id, Duration: time.Since(started)})
		return nil
	}
	if handled, used, err := s.compaction.builtinCommand(ctx, prompt, sink); handled {
		res := event.Result{Subtype: "success", SessionID: s.id, Duration: time.Since(started), Text: strings.TrimSpace(prompt) + " done"}
		if err != nil {
			res.Subtype, res.IsError, res.Text = "error_during_execution", true, err.Error()
		}
		s.acct.account(&res, used)
		sink.Emit(res)
		return nil
	}
	defer s.grants.End("")
	if text, ok, err := s.sk.expandCommand(ctx, prompt); err != nil {
		return fail(err)
	} else if ok {
		prompt = text
	}
	blocks, err := s.hookd.submitPrompt(ctx, s.initialPrompt(prompt), sink)
	if err != nil {
		return fail(err)
	}
	user := message.User(blocks...)
	history := append(s.History(), user)
	uuid, err := sink.Append(ctx, user)
	if err != nil {
		return err
	}
	s.undo.beginSnapshot(uuid)
	sink.Emit(event.UserMessage{UUID: uuid, Message: user})

	g := newGate(s, s.checker, event.Origin{}, sink.Emit, nil)
	agent := s.newMainAgent(g, sink, history)
	if t := s.teams.Current(); t != nil {
		t.SetLeadState(ctx, team.StateWorking)
		defer t.SetLeadState(context.WithoutCancel(ctx), team.StateIdle)
	}
	cwd := agent.State.Cwd
	ran, runErr := loop.Drive(ctx, agent, history, nil, nil)
	out := ran.Out
	s.hookd.stopFailure(ctx, runErr, out.Messages)
	s.hookd.cwdChanged(ctx, cwd, agent.State.Cwd)
	s.keep(agent, out, sink)

	cacheBefore := s.cacheTotals
	s.cacheTotals = s.watch.Totals()
	res := event.Result{
		Subtype:          out.Subtype,
		IsError:          out.Subtype != "success",
		Text:             out.Text,
		SessionID:        s.id,
		NumTurns:         out.NumTurns(),
		Duration:         time.Since(started),
		APIDuration:      out.APIDuration,
		StopReason:       out.StopReason,
		Denials:          g.TakeDenials(),
		Cache:            cacheStats(subTotals(s.cacheTotals, cacheBefore)),
		StructuredOutput: s.sdk.structuredAnswer(),
	}
	if runErr != nil {
		res.Text = runErr.Error()
	}
	used := out.Ledger.Clone()
	used.Merge(s.acct.unaccounted())
	s.acct.account(&res, used)
	sink.Emit(res)
	if runErr != nil {
		return fmt.Errorf("run prompt: %w", runErr)
	}
	return nil
}

// announce opens a Send's stream: the init event, then the notices found since the last.
func (s *Session) announce(ctx context.Context, sink *chanSink) {
	reloaded := s.plug.reloadPlugins(ctx)
	plugins, pluginErrors := initPlugins(s.plug.plugins())
	sink.Emit(event.Init{SessionID: s.id, Model: s.switches.Model(), Cwd: s.Cwd(), Tools: s.pool(ctx).Names(), PermissionMode: s.PermissionMode(),
		Skills: s.sk.skillNames(), Agents: s.agents.names(), MCPServers: s.mcpStatus(), Plugins: plugins, PluginErrors: pluginErrors})
	for _, n := range reloaded {
		sink.Emit(n)
	}
	for _, n := range s.takeNotices() {
		sink.Emit(n)
	}
}

// newMainAgent builds the main agent of one Send, through the constructor every agent is
// built by: the session's prompt, pool and gate, its cache watcher (whose totals the result
// reports), the structured-output and Stop-hook checks, the session's observers and the
// background tasks' queue, and the compaction hooks of the main thread.
func (s *Session) newMainAgent(g *toolgate.Gate, sink *chanSink, history []message.Message) *loop.Agent {
	s.mu.Lock()
	state := s.state
	s.mu.Unlock()
	listing := s.newListing(s.pool, history)
	s.agents.setMainParent()
	observers := append(s.observers(listing), s.agents.queue)
	s.agents.replayHeld()
	return s.agents.runner.NewAgent(subagent.AgentSpec{
		Kind: subagent.KindMain, Model: s.switches.Model(), MaxTokens: s.opts.MaxTokens, Thinking: s.switches.thinking(),
		System: s.conf.systemPrompt, Pool: s.pool, Lookup: s.lookupTool, Gate: g, Files: s.files, State: state,
		MaxTurns: s.opts.MaxTurns, Source: "main", Prepare: s.prepare, Stop: structuredStop{s, stopHook{s}},
		Check:     func(out *loop.Outcome) (string, bool) { return s.sdk.checkRun(s.opts.SDK.JSONSchema, out) },
		Observers: observers, Sink: sink, AfterTurn: s.agents.runner.AfterTurn(""),
		Watch: s.watch, Compaction: s.compaction.mainCompaction(sink, listing), Logger: s.logger,
	})
}

// keep makes a finished run the session's state: its history (from the compaction
// boundary when it compacted), what its newest turn sent, its working state.
func (s *Session) keep(agent *loop.Agent, out *loop.Outcome, sink *chanSink) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.history = out.Messages
	s.cacheSafe = agent.LastCacheSafe()
	if sink.replaced {
		s.uuids = sink.uuids
	} else {
		s.uuids = append(s.uuids, sink.uuids...)
	}
	s.state = agent.State
}

// Close ends the session and releases what it holds.
func (s *Session) Close() error {
	if !s.opts.Offline {
		// "other": the SDK's ExitReason for a session that simply ended (its input did).
		s.hooks.Run(context.Background(), hooks.SessionEnd, s.hookd.hookInput(s.Cwd(), hooks.Input{Reason: "other"}))
	}
	s.watched.close()
	s.hooks.Wait()
	return s.shutdown()
}

// shutdown stops everything the session started, in the reverse order of opening; every
// part may be missing (New calls it when a step fails).
func (s *Session) shutdown() error {
	s.undo.stopShadow()
	if s.jobs != nil {
		s.jobs.Close()
	}
	s.teams.Close()
	s.agents.close()
	s.lsp.Close()
	if s.mcp != nil {
		s.mcp.Close()
	}
	var err error
	if s.transcript != nil {
		err = s.transcript.Close()
	}
	for _, c := range s.closers {
		err = errors.Join(err, c())
	}
	return err
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

// SetPermissionMode switches the main agent's mode for the next calls.
func (s *Session) SetPermissionMode(mode string) error {
	m, err := permission.ParseMode(mode)
	if err != nil {
		return err
	}
	s.checker.SetMode(m)
	s.persist.recordMetadata(context.Background(), transcript.TypeMode, string(m))
	return nil
}

// Usage returns the tokens used by every Send so far and the price of those whose model has a
// known price (see [Session.Ledger] for which).
func (s *Session) Usage() (message.Usage, float64) {
	s.acct.mu.Lock()
	defer s.acct.mu.Unlock()
	u, usd, _, _ := s.acct.ledger.Total()
	return u, usd
}

// ledgerNow returns what every Send so far used, by model.
func (a *accounts) ledgerNow() cost.Ledger {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ledger.Clone()
}

// cacheSafeNow returns what the main agent's newest completed turn sent, or nil.
func (s *Session) cacheSafeNow() *loop.CacheSafe {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cacheSafe
}

// MemoryFiles lists the memory files in the system prompt, in load order, then the auto
// memory's index (memory.KindAuto) when auto memory is on.
func (i *Inspector) MemoryFiles() []memory.File {
	s := i.s
	var files []memory.File
	if s.memory != nil {
		files = s.memory.Files()
	}
	if f, ok := i.autoMemoryFile(); ok {
		files = append(files, f)
	}
	return files
}

// observers are consulted at every request boundary of the main agent; listing is this
// run's announcer of the session's changing lists.
func (s *Session) observers(listing *listingObserver) []loop.Observer {
	obs := []loop.Observer{rulesObserver{s}, planObserver{s}}
	if s.mcp != nil {
		obs = append(obs, mcpObserver{s})
	}
	if s.lsp != nil {
		obs = append(obs, lspObserver{s})
	}
	if t := s.teams.Current(); t != nil && t.LeadInbox() != nil {
		obs = append(obs, t.LeadInbox())
	}
	return append(obs, listing)
}

// mcpObserver passes the MCP manager's news (a server lost, back, or marked unhealthy) to the
// model and shows it to the user as a notice too: a server that stops answering is a problem
// the user must see in every output mode.
type mcpObserver struct{ s *Session }

func (o mcpObserver) Observe(ctx context.Context) []message.Block {
	news := o.s.mcp.Observe(ctx)
	for _, b := range news {
		text := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(b.Text, "<system-reminder>"), "</system-reminder>"))
		for _, line := range strings.Split(text, "\n") {
			level := "info"
			if strings.Contains(line, "gone until") || strings.Contains(line, "declined") {
				level = "warn"
			}
			if line != "" {
				o.s.emit(event.Notice{Level: level, Text: line})
			}
		}
	}
	return news
}

// prepare finishes every request of this session's agents before it is sent: rarely needed
// tools are deferred, then the cache breakpoints are placed.
func (s *Session) prepare(r *provider.Request) {
	s.deferTools(context.Background(), r)
	provider.PlaceBreakpoints(r, s.ttl)
}
