package session

import (
	"context"
	"errors"
	"log/slog"

	"github.com/google/uuid"
	"github.com/keel-dev/keel/internal/cachewatch"
	"github.com/keel-dev/keel/internal/cost"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/toolsearch"
	"github.com/keel-dev/keel/internal/transcript"
)

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
	s.wrapFallback()
	if err := s.conf.loadSettings(); err != nil {
		return nil, err
	}
	s.plug = openPlugins(ctx, s)
	policy, problems := s.conf.permissionPolicy()
	s.notices = append(s.notices, problems...)
	s.checker = newChecker(s, policy)
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
	s.sk = newSkills(s)
	s.builtins = s.buildTools()
	st, err := openTranscript(ctx, s)
	if err != nil {
		return nil, err
	}
	s.logger = logger.With("session", s.id)
	env := restore(ctx, s, st)
	if err := resumeAt(ctx, s); err != nil {
		return nil, err
	}
	s.undo = newUndo(s)
	s.wtree = newMainWorktree(s)
	s.teams = s.conf.team()
	s.buildAgents(ctx)
	// Set here, above both agents.go and send.go: the reports' turn is a Send.
	s.agents.send = s.Send
	s.buildCron(ctx)
	if st != nil {
		s.wtree.Restore(st.Metadata[transcript.TypeWorktree])
	}
	if err := s.conf.openTeam(ctx, st != nil); err != nil {
		return nil, err
	}
	if err := s.applyMainAgent(); err != nil {
		return nil, err
	}
	s.conf.buildPrompt(ctx, env)
	s.undo.Warm()
	s.conf.untrustedNotice()
	s.notices = append(s.notices, s.teams.Resume(ctx)...)
	source := "startup"
	if st != nil {
		source = "resume"
	}
	if !opts.Offline {
		startHooks(ctx, s, source)
	}
	return s, nil
}

// newChecker is the session's permission checker: policy, asking through the MCP tool
// --permission-prompt-tool names, else the embedder's asker, else refusing as a headless run
// does — each ask first through the sandbox's and the hooks' answers (notifyingAsker).
func newChecker(s *Session, policy permission.Policy) *permission.Checker {
	var asker permission.Asker = permission.Headless{}
	switch {
	case s.opts.MCP.PermissionPromptTool != "":
		asker = promptToolAsker{s, s.opts.MCP.PermissionPromptTool}
	case s.opts.Asker != nil:
		asker = s.opts.Asker
	}
	return permission.New(permission.Config{Policy: policy, Asker: notifyingAsker{s, asker}, Home: userHome(), Logger: s.logger, Classifier: autoClassifier{s}})
}

// joinParts connects the session's components to it: the switches, the hook events, the
// inspector and the compaction their wiring (they need nothing opening builds first), the
// accounts what they read, the configuration wiring its back-pointer.
func (s *Session) joinParts() {
	s.switches = newSwitches(s)
	s.acct.maxBudget, s.acct.catalog = s.opts.SDK.MaxBudgetUSD, s.switches.ModelCatalog
	s.acct.agentLedger = func() cost.Ledger { return s.agents.agentLedger() }
	s.hookd = newHookDispatch(s)
	s.insp = newInspector(s)
	s.compaction = newCompaction(s)
	s.conf.s = s
	s.persist.entries = historyEntries(s)
}

// Close ends the session and releases what it holds.
func (s *Session) Close() error {
	if !s.opts.Offline {
		// "other": the SDK's ExitReason for a session that simply ended (its input did).
		s.hooks.Run(context.Background(), hooks.SessionEnd, s.hookd.Input(s.Cwd(), hooks.Input{Reason: "other"}))
	}
	s.watched.close()
	s.hooks.Wait()
	return s.shutdown()
}

// shutdown stops everything the session started, in the reverse order of opening; every
// part may be missing (New calls it when a step fails).
func (s *Session) shutdown() error {
	s.undo.Stop()
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
