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

	"github.com/google/uuid"

	"github.com/keel-dev/keel/internal/agentdef"
	"github.com/keel-dev/keel/internal/builtin"
	"github.com/keel-dev/keel/internal/cachewatch"
	"github.com/keel-dev/keel/internal/coord"
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
	"github.com/keel-dev/keel/internal/transcript"
)

// Options configure a session. The zero value is usable except for Provider.
type Options struct {
	// Cwd is the working directory; empty means the process's.
	Cwd string
	// Home is keel's directory (KEEL_HOME); empty means no persistence.
	Home string
	// Provider is the model; required.
	Provider provider.Provider
	// Model is the model id sent with every request.
	Model     string
	MaxTokens int64
	// MaxTurns caps model requests per Send; 0 means no cap.
	MaxTurns int
	// SystemPrompt replaces the default system prompt; AppendSystemPrompt is added to it.
	SystemPrompt       string
	AppendSystemPrompt string
	// PermissionMode is one of default, acceptEdits, plan, dontAsk, bypassPermissions.
	PermissionMode string
	// Tools are added after the built-ins, in the order given.
	Tools []tool.Tool
	// SessionID fixes the session's id; empty means a new random one.
	SessionID string
	// Version is keel's version, recorded in transcripts.
	Version string
	Logger  *slog.Logger

	// SettingsFlags are command-line flags that act as a settings source.
	SettingsFlags settings.Flags
	// SettingsArgs are --settings values (a file or a JSON object), in order.
	SettingsArgs []string
	// ManagedSettingsPath and ManagedMemoryPath override the system-wide files (tests).
	ManagedSettingsPath string
	ManagedMemoryPath   string
	// Trust runs project-provided hooks and MCP servers without a recorded trust (--trust).
	Trust bool
	// Asker answers permission questions; nil denies with a message naming the rule to add.
	Asker permission.Asker
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// MCP configures MCP servers.
	MCP MCPOptions

	// Resume continues the session with this id; Continue the newest one in Cwd.
	Resume   string
	Continue bool
	// ForkSession continues Resume or Continue as a new session, leaving the original alone.
	ForkSession bool
	// NoPersistence writes no transcript and no file history.
	NoPersistence bool
	// ContextWindow is the model's context window in tokens; 0 means DefaultContextWindow.
	ContextWindow int64
	// Offline opens the stored session for maintenance (`keel rewind`): no MCP servers are
	// started and no SessionStart or SessionEnd hooks run.
	Offline bool

	// Agents is the --agents JSON; ForkSubagents makes an Agent call without subagent_type a
	// fork (also the forkSubagents setting); MaxAgentDepth limits nesting (0: subagents do not
	// start subagents).
	Agents        string
	ForkSubagents bool
	MaxAgentDepth int
	// Agent runs the main thread as that agent definition (keel --agent NAME); ModelFlag says
	// Model was chosen explicitly and wins over the agent's model.
	Agent     string
	ModelFlag bool
	// LSPWait bounds how long an edit waits for its language server's diagnostics; 0 means
	// lsp.DefaultWait.
	LSPWait time.Duration

	// Detacher reaches the supervisor: agents of this session that it still runs are
	// mirrored again on open, and with DetachBackground the main thread's new background
	// agents run there, so that they outlive this process (detached.go).
	Detacher         subagent.Detacher
	DetachBackground bool
	// DetachedFrom is the transcript path of another session whose detached agent this one
	// runs (the supervisor's job): the agent's transcript goes beside that one. Use it with
	// NoPersistence and that session's SessionID.
	DetachedFrom string
	// Team configures agent teams (off unless enabled here, by the teams setting or by
	// CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1).
	Team TeamOptions
	// Coordination says how teams reach NATS when settings choose that backend
	// (coordination.go).
	Coordination CoordinationOptions
}

// Session is one conversation. Send may not be called concurrently; other methods may.
type Session struct {
	id     string
	opts   Options
	logger *slog.Logger

	projectDir string
	settings   *settings.Settings
	hooks      *hooks.Runner
	memory     *memory.Set
	prompt     *prompt.Builder
	ttl        provider.TTLPolicy
	checker    *permission.Checker
	watch      *cachewatch.Watcher
	// notices are configuration problems found while opening, reported with the first Send.
	notices []event.Notice
	// transcript is nil when nothing is persisted; snapshots likewise.
	transcript *transcript.Writer
	snapshots  *snapshot.Store

	files     *tool.FileState
	validator *tool.Validator
	builtins  []tool.Tool
	jobs      *shell.Jobs
	todos     *builtin.Todos
	mcp       *mcphost.Manager
	// nativeSearch: the provider defers MCP tools itself (provider.NativeToolSearcher).
	nativeSearch bool
	skills       *skill.Catalog
	grants       *skill.Grants
	// forkRunner runs fork-context skills as subagents; nil until agents are wired.
	forkRunner skill.ForkRunner
	// helpers counts what tools' own model requests use (WebFetch, WebSearch).
	helpers helperMeter
	// lsp runs the language servers of the lspServers settings; nil when none are set.
	lsp *lsp.Manager

	// mu guards history, state, busy and totals.
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
	totals       message.Usage
	costUSD      float64
	// cacheTotals are the watcher's totals at the end of the last Send.
	cacheTotals cachewatch.Totals
	// cacheSafe is what the main agent's newest turn sent (for forks and helpers).
	cacheSafe *loop.CacheSafe
	// sink receives the events of the Send in progress; nil between Sends.
	sink *chanSink
	// agents runs subagents and background tasks (agents.go).
	agents *agents
	// mainAgent is the definition the main thread runs as (Options.Agent); initialSent says
	// its initialPrompt was used.
	mainAgent   *agentdef.Definition
	initialSent bool
	// team is the session's agent team (team.go); teamBackend its store; teamTemp a
	// directory to remove when the session has no keel directory.
	team        *team.Team
	teamBackend coord.Backend
	teamTemp    string
	// idleEvents, if set, receives the events of background work between Sends (guarded by
	// mu); without it they are held for the next Send.
	idleEvents func(event.Event)
}

// ErrBusy is returned when Send is called while another Send runs.
var ErrBusy = errors.New("session is busy with another prompt")

// New opens a session.
func New(ctx context.Context, opts Options) (*Session, error) {
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
	s.loadSettings()
	policy, warnings := s.permissionPolicy()
	for _, w := range warnings {
		s.notices = append(s.notices, event.Notice{Level: "warn", Text: w})
	}
	var asker permission.Asker = permission.Headless{}
	switch {
	case opts.MCP.PermissionPromptTool != "":
		asker = promptToolAsker{s, opts.MCP.PermissionPromptTool}
	case opts.Asker != nil:
		asker = opts.Asker
	}
	s.checker = permission.New(permission.Config{Policy: policy, Asker: notifyingAsker{s, asker}, Home: userHome(), Logger: s.logger})
	s.state.AdditionalDirs = policy.Dirs[1:]
	s.buildHooks()
	s.buildLSP()
	s.buildCachePolicy()
	if !opts.Offline {
		s.startMCP(ctx)
	}
	s.loadSkills()
	s.forkRunner = agentForks{s}
	s.builtins = s.buildTools()
	st, err := s.openTranscript(ctx)
	if err != nil {
		return nil, err
	}
	s.logger = logger.With("session", s.id)
	env := s.restore(st)
	s.buildAgents(ctx)
	err = s.buildTeam(ctx, st != nil)
	if err == nil {
		err = s.applyMainAgent()
	}
	if err != nil {
		s.closeTeam()
		s.closeAgents()
		s.lsp.Close()
		s.jobs.Close()
		if s.mcp != nil {
			s.mcp.Close()
		}
		if s.transcript != nil {
			_ = s.transcript.Close()
		}
		return nil, err
	}
	s.buildPrompt(ctx, env)
	s.resumeTeam(ctx)
	source := "startup"
	if st != nil {
		source = "resume"
	}
	if !opts.Offline {
		s.startHooks(ctx, source)
	}
	return s, nil
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
// fixed order, then MCP tools (or ToolSearch and what it found) from the current generation.
// With a provider that searches deferred tools itself every MCP tool is listed, and
// markDeferred flags them in the request.
func (s *Session) pool(ctx context.Context) *tool.Pool {
	base := append(append([]tool.Tool(nil), s.builtins...), s.opts.Tools...)
	if s.mcp == nil {
		return s.mainFilter(tool.Assemble(base, nil))
	}
	if s.nativeSearch {
		return s.mainFilter(s.mcp.NativePool(ctx, base))
	}
	return s.mainFilter(s.mcp.Pool(ctx, base))
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
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(loop.ErrInterrupted)

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

// run is one Send: the prompt joins the history, the loop runs, the result is reported.
func (s *Session) run(ctx context.Context, prompt string, sink *chanSink) error {
	started := time.Now()
	agentUsage, agentCost := s.agentUsage()
	helperUsage, helperCost := s.helpers.total()
	pool := s.pool(ctx)
	sink.Emit(event.Init{SessionID: s.id, Model: s.Model(), Cwd: s.Cwd(), Tools: pool.Names(), PermissionMode: s.PermissionMode(),
		Skills: s.skillNames(), Agents: s.agentNames(), MCPServers: s.mcpStatus()})
	for _, n := range s.takeNotices() {
		sink.Emit(n)
	}
	if handled, err := s.builtinCommand(ctx, prompt, sink); handled {
		res := event.Result{Subtype: "success", SessionID: s.id, Duration: time.Since(started), Text: strings.TrimSpace(prompt) + " done"}
		if err != nil {
			res.Subtype, res.IsError, res.Text = "error_during_execution", true, err.Error()
		}
		sink.Emit(res)
		return nil
	}
	defer s.grants.End("")
	if text, ok, err := s.expandCommand(ctx, prompt); err != nil {
		sink.Emit(event.Result{Subtype: "error_during_execution", IsError: true, Text: err.Error(), SessionID: s.id, Duration: time.Since(started)})
		return nil
	} else if ok {
		prompt = text
	}
	prompt = s.initialPrompt(prompt)
	blocks, err := s.submitPrompt(ctx, prompt, sink)
	if err != nil {
		sink.Emit(event.Result{Subtype: "error_during_execution", IsError: true, Text: err.Error(), SessionID: s.id, Duration: time.Since(started)})
		return nil
	}
	user := message.User(blocks...)
	history := append(s.History(), user)
	uuid, err := sink.Append(ctx, user)
	if err != nil {
		return err
	}
	s.beginSnapshot(uuid)
	sink.Emit(event.UserMessage{UUID: uuid, Message: user})

	s.mu.Lock()
	state := s.state
	s.mu.Unlock()
	g := &gate{s: s, checker: s.checker, emit: sink.Emit}
	agent := &loop.Agent{
		Provider:  s.opts.Provider,
		Model:     s.Model(),
		MaxTokens: s.opts.MaxTokens,
		System:    s.systemPrompt,
		Pool:      s.pool,
		Lookup:    s.lookupTool,
		Gate:      g,
		Prepare:   s.prepare,
		Watch:     watcher{s.watch},
		Stop:      stopHook{s},
		Observers: s.observers(),
		Compact:   &compactor{s: s, sink: sink, sys: s.systemPrompt, pool: loop.Specs(pool)},
		Validator: s.validator,
		Files:     s.files,
		State:     state,
		SessionID: s.id,
		MaxTurns:  s.opts.MaxTurns,
		Source:    "main",
		Sink:      sink,
		Logger:    s.logger,
	}
	s.wireAgent(agent)
	if s.team != nil {
		s.team.SetLeadState(ctx, team.StateWorking)
		defer s.team.SetLeadState(context.WithoutCancel(ctx), team.StateIdle)
	}
	out, runErr := agent.Run(ctx, history)

	s.mu.Lock()
	s.history = out.Messages
	s.cacheSafe = agent.LastCacheSafe()
	if sink.replaced {
		s.uuids = sink.uuids
	} else {
		s.uuids = append(s.uuids, sink.uuids...)
	}
	s.state = agent.State
	s.totals = s.totals.Add(out.Usage)
	runCost := cost.USD(s.opts.Model, out.Usage)
	s.costUSD += runCost
	s.mu.Unlock()
	cacheBefore := s.cacheTotals
	s.cacheTotals = s.watch.Totals()

	res := event.Result{
		Subtype:     out.Subtype,
		IsError:     out.Subtype != "success",
		Text:        out.Text,
		SessionID:   s.id,
		NumTurns:    out.Turns,
		Duration:    time.Since(started),
		APIDuration: out.APIDuration,
		CostUSD:     runCost,
		Usage:       out.Usage,
		StopReason:  out.StopReason,
		Denials:     g.takeDenials(),
		Cache:       cacheStats(subTotals(s.cacheTotals, cacheBefore)),
	}
	if runErr != nil {
		res.Text = runErr.Error()
	}
	s.rollUpAgents(&res, agentUsage, agentCost)
	s.rollUpHelpers(&res, helperUsage, helperCost)
	sink.Emit(res)
	if runErr != nil {
		return fmt.Errorf("run prompt: %w", runErr)
	}
	return nil
}

// Close ends the session and releases what it holds.
func (s *Session) Close() error {
	if !s.opts.Offline {
		s.hooks.Run(context.Background(), hooks.SessionEnd, s.hookInput(s.Cwd(), hooks.Input{Reason: "exit"}))
	}
	s.hooks.Wait()
	s.jobs.Close()
	s.closeTeam()
	s.closeAgents()
	s.lsp.Close()
	if s.mcp != nil {
		s.mcp.Close()
	}
	if s.transcript != nil {
		return s.transcript.Close()
	}
	return nil
}

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
	s.recordMetadata(context.Background(), transcript.TypeMode, string(m))
	return nil
}

// Model returns the model the next request uses.
func (s *Session) Model() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opts.Model
}

// SetModel switches the model for the next Send. The model is part of the prompt-cache key,
// so the cache starts over; the watcher reports it as such.
func (s *Session) SetModel(model string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.Model = model
}

// Usage returns the tokens used by every Send so far and their cost.
func (s *Session) Usage() (message.Usage, float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.totals, s.costUSD
}

// CacheSafe returns what the main agent's newest completed turn sent, or nil.
func (s *Session) CacheSafe() *loop.CacheSafe {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cacheSafe
}

// skillNames lists the skills and commands a user can invoke with /name.
func (s *Session) skillNames() []string {
	var names []string
	for _, sk := range s.skills.All() {
		if sk.UserInvocable {
			names = append(names, sk.Name)
		}
	}
	return names
}

// MemoryFiles lists the memory files in the system prompt, in load order.
func (s *Session) MemoryFiles() []memory.File {
	if s.memory == nil {
		return nil
	}
	return s.memory.Files()
}

// Skills lists the skills and commands this session can run.
func (s *Session) Skills() []skill.Skill { return s.skills.All() }

// observers are consulted at every request boundary of the main agent.
func (s *Session) observers() []loop.Observer {
	obs := []loop.Observer{rulesObserver{s}}
	if s.mcp != nil {
		obs = append(obs, s.mcp)
	}
	if s.lsp != nil {
		obs = append(obs, lspObserver{s})
	}
	if s.team != nil && s.team.LeadInbox() != nil {
		obs = append(obs, s.team.LeadInbox())
	}
	return obs
}

// prepare finishes every request of this session's agents before it is sent: MCP tools the
// provider searches natively are flagged deferred, then the cache breakpoints are placed.
func (s *Session) prepare(r *provider.Request) {
	s.markDeferred(context.Background(), r)
	provider.PlaceBreakpoints(r, s.ttl)
}
