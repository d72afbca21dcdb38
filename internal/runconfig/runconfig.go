// Package runconfig holds the one configuration of a keel run: everything a session was asked
// for — working directory, provider and model, permission mode and rules, directories,
// settings sources, trust, agents, team, coordination, MCP servers and the Agent SDK's extras —
// in one serialisable [Config].
//
// Every entry point fills a Config once (the command line from its flags, the library from
// keel.Options) and opens its session from it through session.Open; a supervisor job and a
// process teammate carry the Config they were launched with, so a session started on behalf
// of another is configured as that one was. Adding a knob is adding a field here: every entry
// point, job record and teammate launch then carries it.
//
// What cannot be serialised — the provider's API key, callbacks, in-process MCP servers,
// custom tools, the logger — is not configuration; session.Seams holds it.
package runconfig

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/keel-dev/keel/internal/atomicfile"
)

// Config is everything a run was asked for. The zero value is a run in the process's working
// directory with keel's defaults. JSON field names follow Claude Code's camelCase and never
// change: job records and teammate launches are read back by later keel processes.
type Config struct {
	// Cwd is the working directory; empty means the process's.
	Cwd string `json:"cwd,omitempty"`
	// Home is keel's directory ($KEEL_HOME); empty keeps nothing.
	Home string `json:"home,omitempty"`
	// SessionHomes are the directories whose projects folders hold sessions: the first is
	// where a new session is written, all are searched (resume, continue, listing). Empty
	// means Home alone; [Env.Apply] fills it ([Env.SessionHomes]).
	SessionHomes []string `json:"sessionHomes,omitempty"`
	// Version is keel's version, recorded in transcripts.
	Version string `json:"version,omitempty"`

	// Provider is anthropic (the default) or openai; Model an id or an alias; BaseURL
	// overrides the provider's address. The API key is never part of a Config.
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	BaseURL  string `json:"baseUrl,omitempty"`
	// FallbackModel answers when the main model is overloaded or unavailable.
	FallbackModel string `json:"fallbackModel,omitempty"`

	// MaxTurns caps model requests per prompt; 0 means no cap.
	MaxTurns int `json:"maxTurns,omitempty"`
	// MaxConcurrentSubagents caps a fan-out's agents running at once; 0 is the default (20).
	MaxConcurrentSubagents int `json:"maxConcurrentSubagents,omitempty"`
	// CronMinInterval lowers the shortest interval a scheduled job's schedule may have below
	// cron.MinInterval (a minute); 0 keeps it. For tests only, which must see a recurring job
	// tick several times in seconds (KEEL_TEST_CRON_MIN_INTERVAL).
	CronMinInterval time.Duration `json:"cronMinInterval,omitempty"`
	// SystemPrompt replaces keel's system prompt; AppendSystemPrompt adds to it.
	SystemPrompt       string `json:"systemPrompt,omitempty"`
	AppendSystemPrompt string `json:"appendSystemPrompt,omitempty"`

	// PermissionMode is one of [PermissionModes]; empty takes the settings' defaultMode.
	PermissionMode string `json:"permissionMode,omitempty"`
	// AllowedTools and DisallowedTools are permission rules in settings syntax, one per entry
	// ([SplitToolList] splits what a flag was given).
	AllowedTools    []string `json:"allowedTools,omitempty"`
	DisallowedTools []string `json:"disallowedTools,omitempty"`
	// AddDirs are extra working directories.
	AddDirs []string `json:"addDirs,omitempty"`

	// Settings are extra settings sources, a JSON file or a JSON object each, in order.
	Settings []string `json:"settingsArgs,omitempty"`
	// SettingSources, when LimitSources is set, are the filesystem levels read (user,
	// project, local); an empty list reads none (--setting-sources).
	LimitSources   bool     `json:"limitSources,omitempty"`
	SettingSources []string `json:"settingSources,omitempty"`
	// Trust treats the workspace as trusted without a recorded trust.
	Trust bool `json:"trust,omitempty"`
	// IgnoreSettingsErrors runs on without a settings file that does not parse.
	IgnoreSettingsErrors bool `json:"ignoreSettingsErrors,omitempty"`

	// Resume continues the stored session with this id; Continue the newest one in Cwd;
	// ForkSession continues either as a new session. ResumeSessionAt, with Resume, continues
	// from that assistant message.
	Resume          string `json:"resume,omitempty"`
	Continue        bool   `json:"continue,omitempty"`
	ForkSession     bool   `json:"forkSession,omitempty"`
	ResumeSessionAt string `json:"resumeSessionAt,omitempty"`
	// SessionID names a new session; empty means a random UUID.
	SessionID string `json:"sessionId,omitempty"`
	// NoPersistence keeps no transcript or file history.
	NoPersistence bool `json:"noPersistence,omitempty"`
	// Offline opens a stored session for maintenance (keel rewind): no MCP servers start and
	// no SessionStart or SessionEnd hooks run.
	Offline bool `json:"offline,omitempty"`

	// Agent runs the main thread as this agent definition.
	Agent string `json:"agent,omitempty"`
	// Agents are extra agent definitions, as the --agents JSON object.
	Agents string `json:"agents,omitempty"`
	// ForkSubagents makes an Agent call without subagent_type fork the caller.
	ForkSubagents bool `json:"forkSubagents,omitempty"`
	// MaxAgentDepth limits nesting (0: subagents do not start subagents).
	MaxAgentDepth int `json:"maxAgentDepth,omitempty"`

	// LimitTools offers only the built-in tools named in Tools (--tools).
	LimitTools bool     `json:"limitTools,omitempty"`
	Tools      []string `json:"tools,omitempty"`
	// JSONSchema asks for the final answer as JSON matching it (--json-schema).
	JSONSchema json.RawMessage `json:"jsonSchema,omitempty"`
	// Effort is one of [EffortLevels]; Thinking is adaptive, enabled or disabled;
	// MaxThinkingTokens is a thinking budget, which wins over the effort's.
	Effort            string `json:"effort,omitempty"`
	Thinking          string `json:"thinking,omitempty"`
	MaxThinkingTokens int64  `json:"maxThinkingTokens,omitempty"`
	// MaxBudgetUSD ends a turn once the session has cost this much, its agents included.
	MaxBudgetUSD float64 `json:"maxBudgetUsd,omitempty"`
	// SetupTrigger runs the Setup hooks at the start: init or maintenance.
	SetupTrigger string `json:"setupTrigger,omitempty"`
	// Plugins are plugins given by path (--plugin-dir, the Agent SDK's plugins option),
	// loaded beside the enabled installed ones.
	Plugins []Plugin `json:"plugins,omitempty"`
	// Sandbox is --sandbox: read-only, workspace-write or off; empty defers to the settings'
	// sandbox.enabled, else on (see internal/sandbox.DefaultOn).
	Sandbox string `json:"sandbox,omitempty"`
	// Interactive says a person drives the run at a terminal (the terminal UI): telemetry
	// reports the terminal, and the caller's TRACEPARENT is not inherited.
	Interactive bool `json:"interactive,omitempty"`

	MCP          MCP          `json:"mcp,omitzero"`
	Team         Team         `json:"team,omitzero"`
	Coordination Coordination `json:"coordination,omitzero"`
	Supervisor   Supervisor   `json:"supervisor,omitzero"`
}

// Plugin is a plugin folder or .zip given by path; a relative path is taken from Cwd.
type Plugin struct {
	Path string `json:"path"`
	// NoMCP loads it without its MCP servers (--plugin-dir-no-mcp, the SDK's
	// skipMcpDiscovery): the driving program owns those connections.
	NoMCP bool `json:"noMcp,omitempty"`
	// SDK says the Agent SDK's plugins option named it (its init.plugins origin).
	SDK bool `json:"sdk,omitempty"`
}

// ResumeChoose, as [Config.Resume], asks the frontend to let the user choose the session to
// resume (`keel --resume` without an id): a frontend that cannot ask fails, listing the
// recent sessions.
const ResumeChoose = "\x00choose"

// MCP configures MCP servers.
type MCP struct {
	// Configs are --mcp-config values (a file or JSON text each); Strict uses only them.
	Configs []string `json:"configs,omitempty"`
	Strict  bool     `json:"strict,omitempty"`
	// ToolSearch is auto (the default), on or off.
	ToolSearch string `json:"toolSearch,omitempty"`
	// PermissionPromptTool names an MCP tool that answers permission questions.
	PermissionPromptTool string `json:"permissionPromptTool,omitempty"`
	// ConnectTimeout (MCP_TIMEOUT), ToolTimeout (MCP_TOOL_TIMEOUT) and MaxOutputTokens
	// (MAX_MCP_OUTPUT_TOKENS); zero means the defaults.
	ConnectTimeout  time.Duration `json:"connectTimeout,omitempty"`
	ToolTimeout     time.Duration `json:"toolTimeout,omitempty"`
	MaxOutputTokens int           `json:"maxOutputTokens,omitempty"`
	// Dynamic keeps an MCP manager without servers, so servers can be added while the
	// session runs (the Agent SDK's mcp_set_servers).
	Dynamic bool `json:"dynamic,omitempty"`
}

// Team configures agent teams.
type Team struct {
	// Enabled turns teams on (the teams setting and CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS do
	// too).
	Enabled bool `json:"enabled,omitempty"`
	// Name names a new team; empty derives it from the session id.
	Name string `json:"name,omitempty"`
	// Mode is where teammates run: one of [TeammateModes]; empty takes the setting.
	Mode string `json:"mode,omitempty"`
	// Lease is how long a task claim holds without a heartbeat (KEEL_TEAM_LEASE); 0 is the
	// team's default. ShutdownTimeout bounds a graceful shutdown.
	Lease           time.Duration `json:"lease,omitempty"`
	ShutdownTimeout time.Duration `json:"shutdownTimeout,omitempty"`
	// InTmux says the session runs inside tmux ($TMUX).
	InTmux bool `json:"inTmux,omitempty"`
	// Worker makes the session the host of one member of an existing team instead of a lead.
	Worker *Worker `json:"worker,omitempty"`
}

// Worker names the team member a worker session runs.
type Worker struct {
	Team   string `json:"team"`
	Member string `json:"member"`
	Resume bool   `json:"resume,omitempty"`
	// LeadTranscript is the lead session's transcript: the teammate's own goes beside it.
	LeadTranscript string `json:"leadTranscript,omitempty"`
	// Remote says the worker joined by itself (keel worker) rather than being started by
	// the lead: a member of its own that claims tasks from the board.
	Remote bool `json:"remote,omitempty"`
}

// Coordination says how teams reach their store.
type Coordination struct {
	// NATSURL is KEEL_NATS_URL: it overrides coordination.url and, unless the settings'
	// coordination.backend says otherwise, selects nats.
	NATSURL string `json:"natsUrl,omitempty"`
}

// Supervisor says how the session uses the keel supervisor, which runs background agents in
// processes of their own beyond the session's life.
type Supervisor struct {
	// Use mirrors the agents the supervisor still runs for this session when it opens.
	Use bool `json:"use,omitempty"`
	// Detach hands the main thread's new background agents to the supervisor.
	Detach bool `json:"detach,omitempty"`
	// DetachedFrom is the transcript of the session whose detached agent this one runs (a
	// supervisor job): the agent's transcript goes beside it.
	DetachedFrom string `json:"detachedFrom,omitempty"`
}

// Teammate is the configuration of a process teammate of a lead configured as c: the lead's
// whole configuration — provider, permissions, settings, agents, coordination — as a member
// of team w. It is a session of its own, so it neither resumes nor names the lead's.
func (c Config) Teammate(w Worker) Config {
	c.Resume, c.Continue, c.ForkSession, c.ResumeSessionAt, c.SessionID = "", false, false, "", ""
	c.SetupTrigger, c.Interactive = "", false
	c.Supervisor = Supervisor{}
	c.Team.Enabled, c.Team.Name = true, ""
	c.Team.Worker = &w
	return c
}

// Job is the configuration of a supervisor job that runs a background agent of session
// sessionID (its transcript at sessionPath), launched by a session configured as c: the
// launcher's configuration, without a transcript of its own and without its team.
func (c Config) Job(sessionID, sessionPath string) Config {
	c.Resume, c.Continue, c.ForkSession, c.ResumeSessionAt = "", false, false, ""
	c.SetupTrigger, c.Interactive = "", false
	c.SessionID, c.NoPersistence = sessionID, true
	c.Supervisor = Supervisor{DetachedFrom: sessionPath}
	// The job runs one agent; it must not lead the launcher's team a second time.
	c.Team = Team{}
	return c
}

// Write stores c as JSON at path, replacing what was there.
func (c Config) Write(path string) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("encode run configuration: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write run configuration: %w", err)
	}
	return atomicfile.WriteFile(path, append(b, '\n'), 0o600)
}

// Read loads a configuration [Config.Write] stored.
func Read(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read run configuration: %w", err)
	}
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return Config{}, fmt.Errorf("read run configuration %s: %w", path, err)
	}
	return c, nil
}
