package session

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/keel-dev/keel/internal/companion"
	"github.com/keel-dev/keel/internal/daemon"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/plugin"
	"github.com/keel-dev/keel/internal/provider/connect"
	"github.com/keel-dev/keel/internal/runconfig"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/telemetry"
)

// Open opens the session cfg describes: the one door every entry point goes through — the
// library, headless and stream-json runs, the terminal UI, workers, supervisor jobs,
// process teammates and `keel agents resume`. It fills what cfg leaves unset from the
// environment, connects the provider (unless seams bring one) with the model catalog,
// reaches the supervisor when cfg asks, and maps the configuration onto the session's
// options in [optionsFor].
func Open(ctx context.Context, cfg runconfig.Config, seams Seams) (*Session, error) {
	getenv := seams.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	env := runconfig.ReadEnv(getenv)
	env.Apply(&cfg)
	if err := resolveResume(&cfg); err != nil {
		return nil, err
	}
	opts := optionsFor(cfg, seams)
	opts.MCP.ClientSecret = env.MCPClientSecret
	if seams.Provider == nil {
		conn := connect.Config{Provider: cfg.Provider, Model: cfg.Model, APIKey: seams.APIKey, BaseURL: cfg.BaseURL, Logger: seams.Logger}
		// The list of models the key can use, refreshed once a day; without it the built-in
		// table resolves aliases, so a failed refresh is no reason not to start. A
		// maintenance session asks no model anything.
		if !cfg.Offline {
			conn.Models, _ = connect.LoadModels(ctx, conn, getenv, cfg.Home, false)
		}
		prov, model, err := connect.Open(conn, getenv)
		if err != nil {
			return nil, err
		}
		opts.Provider, opts.Model, opts.Models = prov, model, conn.Models
		opts.PlanModel = connect.PlanModel(conn, getenv)
		// Those started on this session's behalf use the model it resolved.
		opts.Run.Model = model
	}
	var sup *daemon.Client
	if seams.Program != "" && cfg.Home != "" {
		opts.Coordination.LocalNATS = func(ctx context.Context) (string, error) {
			return LocalNATS(ctx, daemon.ClientConfig{Home: cfg.Home, Exe: seams.Program, Env: seams.SupervisorEnv})
		}
		if cfg.Supervisor.Use && !cfg.NoPersistence {
			sup = daemon.NewClient(daemon.ClientConfig{Home: cfg.Home, Exe: seams.Program, Env: seams.SupervisorEnv,
				NATS: seams.SupervisorNATS, Launch: opts.Run, Logger: seams.Logger})
			opts.Detacher, opts.DetachBackground = sup, cfg.Supervisor.Detach
			opts.Scheduler = sup
		}
	}
	s, err := New(ctx, opts)
	if err != nil {
		if sup != nil {
			err = errors.Join(err, sup.Close())
		}
		return nil, err
	}
	if sup != nil {
		s.closers = append(s.closers, sup.Close)
	}
	if err := s.conf.startTelemetry(ctx, cfg, seams, getenv); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return s, nil
}

// CheckConfig returns the error [Open] would for a settings file of cfg that cannot be read
// or parsed, without opening anything ([CheckSettings]).
func CheckConfig(cfg runconfig.Config, seams Seams) error {
	runconfig.ReadEnv(seams.Getenv).Apply(&cfg)
	return CheckSettings(optionsFor(cfg, seams))
}

// optionsFor maps a configuration and its seams onto the session's options: the one place
// a [runconfig.Config] field reaches the session.
func optionsFor(cfg runconfig.Config, seams Seams) Options {
	o := Options{
		Cwd: cfg.Cwd, Home: cfg.Home, SessionHomes: cfg.SessionHomes, Version: cfg.Version, Logger: seams.Logger,
		Provider: seams.Provider, Model: cfg.Model, ModelFlag: cfg.Model != "",
		MaxTurns: cfg.MaxTurns, SystemPrompt: cfg.SystemPrompt, AppendSystemPrompt: cfg.AppendSystemPrompt,
		PermissionMode: cfg.PermissionMode, Tools: seams.Tools, Asker: seams.Asker,
		SettingsFlags: settings.Flags{Model: cfg.Model, PermissionMode: cfg.PermissionMode,
			AllowedTools: cfg.AllowedTools, DisallowedTools: cfg.DisallowedTools, AddDirs: cfg.AddDirs},
		SettingsArgs: cfg.Settings, Trust: cfg.Trust, IgnoreSettingsErrors: cfg.IgnoreSettingsErrors, Sandbox: cfg.Sandbox,
		Resume: cfg.Resume, Continue: cfg.Continue, ForkSession: cfg.ForkSession, SessionID: cfg.SessionID,
		NoPersistence: cfg.NoPersistence, Offline: cfg.Offline,
		Agent: cfg.Agent, Agents: cfg.Agents, ForkSubagents: cfg.ForkSubagents, MaxAgentDepth: cfg.MaxAgentDepth,
		MCP: MCPOptions{Configs: cfg.MCP.Configs, Strict: cfg.MCP.Strict, ToolSearch: cfg.MCP.ToolSearch,
			PermissionPromptTool: cfg.MCP.PermissionPromptTool, ConnectTimeout: cfg.MCP.ConnectTimeout,
			ToolTimeout: cfg.MCP.ToolTimeout, MaxOutputTokens: cfg.MCP.MaxOutputTokens, Dynamic: cfg.MCP.Dynamic,
			InProcess: seams.MCPServers, Transports: seams.MCPTransports, Elicit: seams.Elicit, Authorize: seams.Authorize},
		SDK: SDKOptions{HookCallbacks: seams.HookCallbacks, CallHook: seams.CallHook, JSONSchema: cfg.JSONSchema,
			LimitSources: cfg.LimitSources, SettingSources: cfg.SettingSources, LimitTools: cfg.LimitTools, BuiltinTools: cfg.Tools,
			MaxBudgetUSD: cfg.MaxBudgetUSD, FallbackModel: cfg.FallbackModel, Effort: cfg.Effort, ThinkingMode: cfg.Thinking,
			MaxThinkingTokens: cfg.MaxThinkingTokens, ResumeSessionAt: cfg.ResumeSessionAt, SetupTrigger: cfg.SetupTrigger},
		DetachedFrom:        cfg.Supervisor.DetachedFrom,
		ManagedSettingsPath: seams.ManagedSettingsPath, ManagedMemoryPath: seams.ManagedMemoryPath,
		Team: TeamOptions{Enabled: cfg.Team.Enabled, Name: cfg.Team.Name, Mode: cfg.Team.Mode, Lease: cfg.Team.Lease,
			ShutdownTimeout: cfg.Team.ShutdownTimeout, InTmux: cfg.Team.InTmux, WorkerCommand: seams.TeammateCommand},
		Coordination: CoordinationOptions{NATSURL: cfg.Coordination.NATSURL, Name: "keel " + cfg.Version},
		Run:          cfg,
	}
	for _, p := range cfg.Plugins {
		kind := plugin.OriginDir
		if p.SDK {
			kind = plugin.OriginSDK
		}
		o.Plugins = append(o.Plugins, plugin.DirSpec{Path: p.Path, Kind: kind, NoMCP: p.NoMCP})
	}
	if w := cfg.Team.Worker; w != nil {
		o.Team.Worker = &TeamWorker{Team: w.Team, Member: w.Member, Resume: w.Resume, LeadTranscript: w.LeadTranscript,
			Remote: w.Remote, Events: seams.WorkerEvents}
	}
	return o
}

// LocalNATS returns the URL of the supervisor's embedded nats-server, starting the supervisor
// (with the server) when none runs: the server of the nats coordination backend when the
// settings name none.
func LocalNATS(ctx context.Context, cfg daemon.ClientConfig) (string, error) {
	cfg.NATS = true
	c := daemon.NewClient(cfg)
	defer c.Close()
	info, err := c.Ensure(ctx)
	if err != nil {
		return "", err
	}
	if info.NATSURL == "" {
		return "", errors.New("the running keel supervisor serves no NATS (it started before the nats backend was chosen); restart it with: keel supervisor stop && keel supervisor start")
	}
	return info.NATSURL, nil
}

// startTelemetry starts keel-otel for the session when telemetry is switched on: every entry
// point that opens a session through [Open] — headless, the Agent SDK, the terminal UI, an
// editor over ACP, the library — exports the same way. A session run on another's behalf (a
// teammate's worker, a supervisor job) exports nothing: its lead records its events. A run
// without keel-otel goes on without telemetry, with a notice.
func (c *configWiring) startTelemetry(ctx context.Context, cfg runconfig.Config, seams Seams, getenv func(string) string) error {
	s := c.s
	if cfg.Team.Worker != nil || cfg.Supervisor.DetachedFrom != "" || cfg.Offline {
		return nil
	}
	env := c.telemetryEnv(getenv)
	if !telemetryWanted(env) {
		return nil
	}
	tc, err := telemetry.FromEnv(env)
	if err != nil {
		return fmt.Errorf("telemetry configuration: %w", err)
	}
	if !tc.Active() {
		return nil
	}
	bin, err := companion.Find(telemetry.Program, seams.Program)
	if err != nil {
		s.mu.Lock()
		s.notices = append(s.notices, event.Notice{Level: "warn", Text: fmt.Sprintf("telemetry is on but %v; running without it", err)})
		s.mu.Unlock()
		return nil
	}
	start := "fresh"
	switch {
	case cfg.Continue:
		start = "continue"
	case cfg.Resume != "":
		start = "resume"
	}
	opts := telemetry.Options{Binary: bin, Stderr: seams.Stderr, Logger: s.logger,
		Session: telemetry.SessionInfo{SessionID: s.id, Version: cfg.Version, StartType: start, TerminalType: "non-interactive",
			UserID: telemetry.InstallationID(cfg.Home)}}
	if cfg.Interactive {
		opts.Session.TerminalType = getenv("TERM_PROGRAM")
	} else {
		// A headless or SDK run joins its caller's trace.
		opts.Traceparent, opts.Tracestate = getenv("TRACEPARENT"), getenv("TRACESTATE")
	}
	x, err := telemetry.Start(ctx, tc, opts)
	if err != nil || x == nil {
		return err
	}
	s.tel.Store(x)
	s.closers = append(s.closers, func() error {
		flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), telemetryFlush)
		defer cancel()
		if err := x.Close(flush); err != nil {
			s.logger.Warn("telemetry", "err", err)
		}
		return nil
	})
	return nil
}

// telemetryEnv is where telemetry's configuration comes from: the env of managed settings
// (an organisation's policy wins), then the process environment, then the env of the user's
// settings — never a project's, which an untrusted repository could use to send the session's
// telemetry to a host of its choosing. Settings are read on the first lookup the environment
// does not answer.
func (c *configWiring) telemetryEnv(getenv func(string) string) func(string) string {
	s := c.s
	var managed, user map[string]string
	load := func() {
		if managed != nil {
			return
		}
		managed, user = map[string]string{}, map[string]string{}
		st, _ := settings.Load(settings.Options{Env: settings.Env{Home: s.opts.Home}, ManagedPath: s.opts.ManagedSettingsPath})
		for name, v := range st.Env {
			if v.From.Scope == settings.ScopeManaged {
				managed[name] = v.V
			} else {
				user[name] = v.V
			}
		}
	}
	return func(k string) string {
		load()
		if v, ok := managed[k]; ok {
			return v
		}
		if v := getenv(k); v != "" {
			return v
		}
		return user[k]
	}
}
