package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/keel-dev/keel/internal/companion"
	"github.com/keel-dev/keel/internal/runconfig"
	"github.com/keel-dev/keel/internal/session"
)

// runConfig is the configuration the run flags ask for: the one place a flag reaches a
// session, whichever command opens it (a run, keel worker, keel team worker, keel agents
// resume). The environment fills what the flags leave unset. Rendering flags (-p, the
// formats, --verbose) say how the run is shown and are not part of it.
func (a *app) runConfig(f *runFlags) (runconfig.Config, error) {
	if err := f.checkNamedFiles(); err != nil {
		return runconfig.Config{}, err
	}
	a.warnStrayRules(f)
	mode := f.permissionMode
	if f.skipPermissions {
		mode = "bypassPermissions"
	}
	s := &f.sdk
	cfg := runconfig.Config{
		Cwd: f.cwd, Home: a.env.Home, Version: Version,
		Provider: f.providerName, Model: f.model, BaseURL: f.baseURL, FallbackModel: s.fallbackModel,
		MaxTurns: f.maxTurns, SystemPrompt: f.systemPrompt, AppendSystemPrompt: f.appendSystemPrompt,
		PermissionMode: mode, AllowedTools: runconfig.SplitToolList(f.allowedTools),
		DisallowedTools: runconfig.SplitToolList(f.disallowedTools), AddDirs: f.addDirs,
		Settings: f.settings, LimitSources: f.set("setting-sources"), SettingSources: s.sources(),
		Trust: f.trust, IgnoreSettingsErrors: f.ignoreSettingsErrors,
		Resume: f.resume, Continue: f.continueLast, ForkSession: f.forkSession, ResumeSessionAt: s.resumeSessionAt,
		SessionID: f.sessionID, NoPersistence: f.noPersistence,
		Agent: f.agent, Agents: f.agents, ForkSubagents: f.forkSubagents,
		LimitTools: f.set("tools") && s.tools != "default", Tools: s.builtinTools(),
		Effort: s.effort, Thinking: s.thinking, MaxThinkingTokens: s.maxThinkingTokens, MaxBudgetUSD: s.maxBudgetUSD,
		SetupTrigger: s.setupTrigger(),
		MCP: runconfig.MCP{Configs: f.mcp.configs, Strict: f.mcp.strict, ToolSearch: f.mcp.toolSearch,
			PermissionPromptTool: f.mcp.permissionPromptTool},
		Team:    runconfig.Team{Name: f.teamName, Mode: f.teammateMode},
		Plugins: s.plugins(), Sandbox: f.sandbox,
		// The supervisor mirrors the agents it still runs for this session; with --no-wait
		// the session's background agents run there, so that they outlive it.
		Supervisor: runconfig.Supervisor{Use: a.env.Home != "" && !f.noPersistence, Detach: f.noWait},
	}
	if f.mcp.permissionPromptTool == stdioPromptTool {
		// Not an MCP tool: the Agent SDK's "ask me over the control protocol" (can_use_tool).
		cfg.MCP.PermissionPromptTool = ""
	}
	if s.jsonSchema != "" {
		var schema map[string]any
		if err := json.Unmarshal([]byte(s.jsonSchema), &schema); err != nil {
			return cfg, usageError{fmt.Errorf("--json-schema is not a JSON schema object: %w", err)}
		}
		cfg.JSONSchema = json.RawMessage(s.jsonSchema)
	}
	if s.resumeSessionAt != "" && f.resume == "" {
		return cfg, usageError{fmt.Errorf("--resume-session-at needs --resume")}
	}
	if err := a.env.Check(runconfig.MCPKeys...); err != nil {
		return cfg, usageError{err}
	}
	// Driven as Claude Code's CLI (stream-json input is how the Agent SDKs talk), sessions
	// go where the SDK's session functions look.
	cfg.SessionHomes = a.env.SessionHomes(cfg.Home, f.inputFormat == "stream-json")
	a.env.Apply(&cfg)
	return cfg, nil
}

// seams are what this process gives every session it opens besides its configuration: the
// environment, the log, and the keel executable that runs the supervisor and process
// teammates.
func (a *app) seams() session.Seams {
	exe := companion.Self()
	return session.Seams{
		Getenv: a.getenv, Logger: a.logger, Stderr: a.std.Err,
		Program: companion.Keel(exe), SupervisorEnv: a.supervisorEnv(), SupervisorNATS: a.embeddedNATS(),
		TeammateCommand: []string{companion.Keel(exe), "team", "worker"},
	}
}

// openSession opens a session from cfg: session.Open, unless a test watches what reaches it.
func (a *app) openSession(ctx context.Context, cfg runconfig.Config, seams session.Seams) (*session.Session, error) {
	if a.open != nil {
		return a.open(ctx, cfg, seams)
	}
	return session.Open(ctx, cfg, seams)
}
