package session

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"time"

	"github.com/keel-dev/keel/internal/cron"
	"github.com/keel-dev/keel/internal/daemon"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/mcphost"
	"github.com/keel-dev/keel/internal/models"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/plugin"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/runconfig"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/subagent"
	"github.com/keel-dev/keel/internal/teamopen"
	"github.com/keel-dev/keel/internal/teamstore"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SDKOptions are what the Agent SDK's options add to a session, through its CLI flags and
// its initialize request; they work from the command line too.
type SDKOptions struct {
	// HookCallbacks are hooks the driving program answers (its hook callbacks); CallHook
	// runs one.
	HookCallbacks []hooks.Callback
	CallHook      hooks.CallFunc
	// JSONSchema asks for the final answer as JSON matching it: the model gets a
	// StructuredOutput tool with this input schema, a mismatch is sent back to it, and the
	// valid answer becomes the result's StructuredOutput (--json-schema).
	JSONSchema json.RawMessage
	// LimitSources restricts the filesystem sources to SettingSources ("user", "project",
	// "local"): settings files, memory files, skills and agents of the other levels are not
	// read (--setting-sources; an empty list reads none).
	LimitSources   bool
	SettingSources []string
	// LimitTools offers only the built-in tools named in BuiltinTools (--tools).
	LimitTools   bool
	BuiltinTools []string
	// MaxBudgetUSD ends a turn once the session has cost this much (error_max_budget_usd).
	MaxBudgetUSD float64
	// FallbackModel answers when the main model is overloaded or unavailable.
	FallbackModel string
	// Effort, ThinkingMode (adaptive, enabled, disabled) and MaxThinkingTokens set the main
	// agent's extended thinking (--effort, --thinking, --max-thinking-tokens): a budget
	// wins, then the effort's budget; disabled turns thinking off.
	Effort            string
	ThinkingMode      string
	MaxThinkingTokens int64
	// ResumeSessionAt, with Resume, continues from this assistant message, dropping what
	// came after it.
	ResumeSessionAt string
	// SetupTrigger runs the Setup hooks at the start: "init" or "maintenance" (keel --init,
	// --maintenance).
	SetupTrigger string
}

// Options configure a session. The zero value is usable except for Provider.
type Options struct {
	// Cwd is the working directory; empty means the process's.
	Cwd string
	// Home is keel's directory (KEEL_HOME); empty means no persistence.
	Home string
	// SessionHomes are the directories whose projects folders hold transcripts: a new
	// session is written under the first, resume and continue search all. Empty: Home.
	SessionHomes []string
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
	// Trust treats the workspace as trusted without a recorded trust (--trust): its settings may
	// widen permissions, and its hooks, MCP servers and skill shell lines run.
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
	// ContextWindow is the model's context window in tokens; 0 means the model's own, from
	// Models (DefaultContextWindow for a model it does not know).
	ContextWindow int64
	// PlanModel, when set, is the model while the permission mode is plan: the opusplan alias
	// plans with opus and carries the plan out with Model (sonnet).
	PlanModel string
	// Models resolves model aliases (in agent definitions, Agent calls) and knows context
	// windows and output limits; nil means keel's built-in table (connect.LoadModels loads one
	// refreshed from the API).
	Models *models.Catalog
	// Offline opens the stored session for maintenance (`keel rewind`): no MCP servers are
	// started and no SessionStart or SessionEnd hooks run.
	Offline bool
	// Sandbox is the --sandbox mode (read-only, workspace-write, off); empty follows the
	// settings' sandbox.enabled (sandbox.go).
	Sandbox string
	// IgnoreSettingsErrors runs on without a settings file that does not parse (reported as
	// a notice) instead of refusing to start.
	IgnoreSettingsErrors bool

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
	// SDK holds what the Agent SDK's options add (sdk.go).
	SDK SDKOptions
	// Plugins are the plugins given by path (--plugin-dir, the Agent SDK's plugins option),
	// loaded beside the enabled installed ones (plugins.go).
	Plugins []plugin.DirSpec

	// Detacher reaches the supervisor: agents of this session that it still runs are
	// mirrored again on open, and with DetachBackground the main thread's new background
	// agents run there, so that they outlive this process (detached.go).
	Detacher         subagent.Detacher
	DetachBackground bool
	// Scheduler reaches the supervisor's scheduled jobs: with it the session offers
	// CronCreate, CronList and CronDelete (cron.go).
	Scheduler Scheduler
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
	// WebBinary is the keel-web companion's path, which converts the pages WebFetch reads;
	// empty finds it beside keel, beside this executable, then on PATH (webfetch.Companion).
	WebBinary string
	// Run is the configuration the session was opened from ([Open]): process teammates are
	// launched with it.
	Run runconfig.Config
}

// CoordinationOptions say how teams reach NATS when settings choose that backend
// (teamstore.Options).
type CoordinationOptions = teamstore.Options

// TeamOptions configure agent teams (teamopen.Options).
type TeamOptions = teamopen.Options

// TeamWorker names the teammate a worker session runs (teamopen.Worker).
type TeamWorker = teamopen.Worker

// Scheduler is the supervisor as the session's scheduled jobs need it: the store of the
// jobs, and a way to make sure a supervisor runs them (daemon.Client).
type Scheduler interface {
	CronStore() (*cron.Store, error)
	Ensure(ctx context.Context) (daemon.Info, error)
}

// MCPOptions configure the session's MCP servers.
type MCPOptions struct {
	// Configs are --mcp-config values (a file or JSON text each); Strict uses only them.
	Configs []string
	Strict  bool
	// InProcess are Go SDK servers run inside this process, by name; Transports are servers
	// reached through the program driving keel (the Agent SDK's in-process servers).
	InProcess  map[string]*mcp.Server
	Transports map[string]mcp.Transport
	// ToolSearch is auto (default), on or off.
	ToolSearch string
	// Environ expands ${VAR} in configurations and is the environment of stdio servers; nil
	// means this process's.
	Environ []string
	// ConnectTimeout (MCP_TIMEOUT), ToolTimeout (MCP_TOOL_TIMEOUT) and MaxOutputTokens
	// (MAX_MCP_OUTPUT_TOKENS); zero means the defaults.
	ConnectTimeout  time.Duration
	ToolTimeout     time.Duration
	MaxOutputTokens int
	// PermissionPromptTool names an MCP tool (mcp__server__tool) that answers permission
	// questions instead of the asker.
	PermissionPromptTool string
	// Authorize sends the user to the OAuth authorization page of the server called server
	// when it asks (an interactive session): on connecting, on a step-up, and for LoginMCP.
	// Nil leaves servers without usable tokens in needs-auth, and `keel mcp login` fixes
	// that. See [mcphost.OAuthOptions].
	Authorize func(ctx context.Context, server, authURL string) error
	// ClientSecret is $MCP_CLIENT_SECRET, the secret of pre-registered OAuth clients whose
	// configuration gives none.
	ClientSecret string
	// Elicit asks the user an MCP server's question (the TUI's form, the Agent SDK's
	// elicitation control request); nil means no one can be asked, and only Elicitation hooks
	// answer. See [mcphost.ElicitFunc].
	Elicit mcphost.ElicitFunc
	// Dynamic keeps an MCP manager even when no server is configured, so servers can be
	// added while the session runs ([Session.SetMCPServers], the Agent SDK's
	// mcp_set_servers).
	Dynamic bool
}

// Seams are what opening a session takes besides its [runconfig.Config]: what cannot be
// serialised — credentials, callbacks, in-process servers, custom tools, the logger — and
// the keel executable that runs the supervisor and process teammates.
type Seams struct {
	// Getenv reads provider credentials and keel's environment; nil means the process's.
	Getenv func(string) string
	// APIKey overrides the provider's key from the environment.
	APIKey string
	// Provider, when set, is the model instead of connecting to the one the configuration
	// names (tests, the demo, a maintenance session that sends nothing); Config.Model names
	// its model.
	Provider provider.Provider
	// Program is the keel executable that runs the supervisor (background agents beyond the
	// session's life, the embedded nats-server); empty means no supervisor is reached.
	// SupervisorEnv is the environment of a supervisor this session starts (see
	// daemon.Environ) and SupervisorNATS makes it run the embedded nats-server.
	Program        string
	SupervisorEnv  []string
	SupervisorNATS bool
	// TeammateCommand is the program and leading arguments of `keel team worker`, which runs
	// a process teammate from the lead's configuration; nil allows in-process teammates only.
	TeammateCommand []string
	// Tools are custom tools, offered after the built-ins.
	Tools  []tool.Tool
	Logger *slog.Logger
	// Asker answers permission questions; nil denies them with the rule that would allow.
	Asker permission.Asker
	// MCPServers are Go SDK servers run in this process; MCPTransports servers reached
	// through the program driving keel (the Agent SDK's in-process servers).
	MCPServers    map[string]*mcp.Server
	MCPTransports map[string]mcp.Transport
	// Elicit asks the user an MCP server's question; Authorize sends the user to an MCP
	// server's sign-in page (see [MCPOptions]).
	Elicit    mcphost.ElicitFunc
	Authorize func(ctx context.Context, server, authURL string) error
	// HookCallbacks are hooks the driving program answers; CallHook runs one.
	HookCallbacks []hooks.Callback
	CallHook      hooks.CallFunc
	// WorkerEvents receives the events of the teammate a worker session runs.
	WorkerEvents func(event.Event)
	// Stderr receives the log of telemetry's exporter (keel-otel); nil discards it.
	Stderr io.Writer
	// ManagedSettingsPath and ManagedMemoryPath replace the system-wide files ("-": none) for
	// tests and the demo. They are seams, never configuration: a configuration file must not
	// be able to swap out the administrator's policy.
	ManagedSettingsPath string
	ManagedMemoryPath   string
}
