// Package keel is an embeddable coding agent: create a [Session] with [New], send it a prompt,
// and range over the events it streams while the model reads, edits and runs commands.
//
//	sess, err := keel.New(ctx, keel.Options{Model: "sonnet"})
//	if err != nil { … }
//	defer sess.Close()
//	for ev, err := range sess.Send(ctx, "fix the failing test") {
//		if err != nil { … }
//		switch ev := ev.(type) {
//		case keel.TextDelta:
//			fmt.Print(ev.Text)
//		case keel.Result:
//			fmt.Println("\ncost:", ev.CostUSD)
//		}
//	}
//
// The same loop runs the main agent and every subagent; events carry an Origin naming the
// agent they come from.
package keel

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/runconfig"
	"github.com/keel-dev/keel/internal/session"
)

// Options configure a session. The zero value works: it talks to the Anthropic API with the
// key in ANTHROPIC_API_KEY, in the process's working directory.
type Options struct {
	// Cwd is the working directory; empty means the process's.
	Cwd string
	// Home is keel's data directory; empty means $KEEL_HOME or ~/.keel.
	Home string
	// Provider is the model API: ProviderAnthropic (the default) or ProviderOpenAI.
	Provider Provider
	// Model is a model id or an alias (opus, sonnet, haiku, fable, default, best); empty means
	// $ANTHROPIC_MODEL or keel's default.
	Model string
	// APIKey and BaseURL override the provider's environment variables.
	APIKey  string
	BaseURL string
	// MaxTurns caps model requests per Send; 0 means no cap.
	MaxTurns int
	// SystemPrompt replaces keel's system prompt; AppendSystemPrompt adds to it.
	SystemPrompt       string
	AppendSystemPrompt string
	// PermissionMode is the session's mode; empty takes the settings' defaultMode, else
	// ModeDefault.
	PermissionMode PermissionMode
	// Tools are custom tools, offered after the built-ins (see [NewTool]).
	Tools []Tool
	// AllowedTools and DisallowedTools are permission rules for this session, in settings
	// syntax ("Bash(go test:*)", "Edit", "mcp__github").
	AllowedTools, DisallowedTools []string
	// AddDirs are extra working directories the agent may use.
	AddDirs []string
	// Settings are extra settings sources: a JSON file path or a JSON object each.
	Settings []string
	// Trust treats the workspace as trusted without a recorded trust (see [Workspace]): its
	// settings may widen permissions, and its hooks, MCP servers and skill commands run.
	Trust bool
	// IgnoreSettingsErrors opens the session even when a settings file does not parse (its
	// settings, deny rules included, are then not used, and a [Notice] says so); without it
	// New fails naming file, line and column.
	IgnoreSettingsErrors bool
	// Sandbox runs Bash in the kernel sandbox: "read-only", "workspace-write" or "off";
	// empty follows the settings' sandbox.enabled, and without it the sandbox is on
	// (workspace-write) where the machine supports it. A program that embeds keel calls
	// [SandboxDispatch] first in main so that it can serve as the sandbox's helper.
	Sandbox string
	// Resume continues the stored session with this id; Continue the newest one in Cwd.
	// ForkSession continues either as a new session, leaving the original untouched.
	Resume      string
	Continue    bool
	ForkSession bool
	// SessionID names a new session; empty means a random UUID.
	SessionID string
	// NoPersistence keeps no transcript or file history.
	NoPersistence bool
	// Agent runs the main thread as this agent definition: its prompt, tools, model (unless
	// Model is set), permission mode (unless PermissionMode is set) and initialPrompt.
	Agent string
	// Agents are extra agent definitions, by name; they win over files of the same name.
	// ForkSubagents makes an Agent call without subagent_type fork the caller.
	Agents        map[string]AgentDef
	ForkSubagents bool
	// MCPConfig are MCP server configurations (a file or JSON text each, .mcp.json's shape);
	// StrictMCPConfig uses only them. MCPServers are Go SDK servers run in this process.
	MCPConfig       []string
	StrictMCPConfig bool
	MCPServers      map[string]*mcp.Server
	// ToolSearch defers MCP tool schemas behind the ToolSearch tool: on, off or auto.
	ToolSearch string
	// PermissionPromptTool names an MCP tool (mcp__server__tool) that answers permission
	// questions instead of Ask.
	PermissionPromptTool string
	// PluginDirs are plugins to load for this session beside the enabled installed ones: a
	// plugin folder or a .zip of one each, as `keel --plugin-dir` takes them.
	PluginDirs []string
	// Getenv looks up provider credentials (ANTHROPIC_API_KEY…); nil means os.Getenv.
	Getenv func(string) string
	// Ask answers permission questions (a terminal prompt, a web UI). Nil denies them, with a
	// reason naming the rule that would allow the call.
	Ask func(ctx context.Context, req PermissionRequest) PermissionAnswer
	// Elicit answers an MCP server's question for the user (elicitation/create): a form to
	// fill in (p.RequestedSchema) or a URL to open. server is the server's configured name.
	// Nil means no one can be asked: only Elicitation hooks answer, and where none is
	// configured keel does not advertise the capability. Fields the answer omits get the
	// schema's defaults.
	Elicit func(ctx context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
	// Teams turns on agent teams: the Agent tool's name spawns teammates that share a task
	// board and a mailbox (also the teams setting, or CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1
	// in the environment). TeammateMode is where teammates run: in-process (the default),
	// process, tmux or auto; the last three need TeammateCommand, the program and leading
	// arguments that start a teammate process (`keel team worker …`).
	Teams           bool
	TeammateMode    TeammateMode
	TeammateCommand []string
	// MCPAuthorize sends the user to the OAuth authorization page authURL of the MCP server
	// called server (shows the address, opens a browser) and returns; the browser's
	// redirect back to keel on 127.0.0.1 completes the sign-in, and ctx ends when it is
	// over. It is called when a server needs a sign-in on connecting, when it asks for more
	// scopes (a step-up), and by [Session.LoginMCP]. Nil means no one can be asked: such
	// servers stay needs-auth until `keel mcp login NAME`. A pre-registered client's secret
	// may come from MCP_CLIENT_SECRET (through Getenv).
	MCPAuthorize func(ctx context.Context, server, authURL string) error
	// Supervisor hands the main thread's background agents to the keel supervisor (`keel
	// supervisor`), which runs each in a process of its own beyond this session's life; their
	// reports reach this session exactly once, or the next one that continues it, which also
	// mirrors the agents the supervisor still runs for it. Nil runs background agents in this
	// process. It needs persistence (a transcript) and is ignored with NoPersistence.
	Supervisor *Supervisor
	// Logger receives keel's logs; nil discards them.
	Logger *slog.Logger
	// Config is a whole run configuration in the JSON form keel's command line gives its
	// terminal UI and its process teammates (`keel team worker --config FILE`); the fields
	// above, where set, override it. Nil means none: the fields above are the configuration.
	Config json.RawMessage
}

// Supervisor says how a session reaches the keel supervisor.
type Supervisor struct {
	// Program is the keel executable that runs the supervisor, and its agents, when none
	// runs yet; required.
	Program string
	// Env is the environment of a supervisor this session starts. The agents take their
	// credentials and model address from it, never from Options.APIKey or this process's
	// shell: build it from settings (keel's CLI does, from the env key of the user's
	// settings). Nil gives the supervisor an empty environment.
	Env []string
	// NATS makes a supervisor this session starts run the embedded NATS server as well (the
	// nats coordination backend with no URL).
	NATS bool
}

// Session is one conversation with an agent.
type Session struct {
	s *session.Session
	// cfg and opts are what the session was opened with (Doctor, SwitchModel, the status
	// line setting).
	cfg  runconfig.Config
	opts Options
}

// New starts a session.
func New(ctx context.Context, opts Options) (*Session, error) {
	cfg, err := opts.config()
	if err != nil {
		return nil, err
	}
	s, err := session.Open(ctx, cfg, opts.seams())
	if err != nil {
		return nil, err
	}
	return &Session{s: s, cfg: cfg, opts: opts}, nil
}

// config is what opts ask for as the one run configuration every entry point opens a session
// from: the one place an option reaches the session.
func (opts Options) config() (runconfig.Config, error) {
	var base runconfig.Config
	if len(opts.Config) > 0 {
		if err := json.Unmarshal(opts.Config, &base); err != nil {
			return base, fmt.Errorf("keel.Options.Config: %w", err)
		}
	}
	if opts.Resume != "" || opts.Continue {
		// Which stored session to continue, and as what, is chosen as one.
		base.Resume, base.Continue, base.ForkSession, base.SessionID, base.ResumeSessionAt = "", false, false, "", ""
	}
	agents, err := agentsJSON(opts.Agents)
	if err != nil {
		return base, err
	}
	cfg := runconfig.Config{
		Cwd: opts.Cwd, Home: opts.Home, Provider: string(opts.Provider), Model: opts.Model, BaseURL: opts.BaseURL,
		MaxTurns: opts.MaxTurns, SystemPrompt: opts.SystemPrompt, AppendSystemPrompt: opts.AppendSystemPrompt,
		PermissionMode: string(opts.PermissionMode), AllowedTools: opts.AllowedTools, DisallowedTools: opts.DisallowedTools,
		AddDirs: opts.AddDirs, Settings: opts.Settings, Trust: opts.Trust, IgnoreSettingsErrors: opts.IgnoreSettingsErrors,
		Resume: opts.Resume, Continue: opts.Continue, ForkSession: opts.ForkSession, SessionID: opts.SessionID,
		NoPersistence: opts.NoPersistence, Agent: opts.Agent, Agents: agents, ForkSubagents: opts.ForkSubagents,
		MCP: runconfig.MCP{Configs: opts.MCPConfig, Strict: opts.StrictMCPConfig, ToolSearch: opts.ToolSearch,
			PermissionPromptTool: opts.PermissionPromptTool},
		Team:    runconfig.Team{Enabled: opts.Teams, Mode: string(opts.TeammateMode)},
		Sandbox: opts.Sandbox,
	}
	for _, dir := range opts.PluginDirs {
		cfg.Plugins = append(cfg.Plugins, runconfig.Plugin{Path: dir})
	}
	if opts.Supervisor != nil {
		// The supervisor runs the main thread's background agents beyond this session.
		cfg.Supervisor = runconfig.Supervisor{Use: true, Detach: true}
	}
	return runconfig.Overlay(base, cfg), nil
}

// seams are what opts give the session besides its configuration.
func (opts Options) seams() session.Seams {
	s := session.Seams{
		Getenv: opts.Getenv, APIKey: opts.APIKey, Tools: sessionTools(opts.Tools), Logger: opts.Logger, Asker: asker(opts.Ask),
		MCPServers: opts.MCPServers, Elicit: opts.Elicit, Authorize: opts.MCPAuthorize, TeammateCommand: opts.TeammateCommand,
	}
	if sup := opts.Supervisor; sup != nil {
		if sup.Program == "" {
			panic("keel.New: Options.Supervisor.Program is required")
		}
		s.Program, s.SupervisorEnv, s.SupervisorNATS = sup.Program, sup.Env, sup.NATS
	}
	return s
}

// ID returns the session id (the transcript's name).
func (s *Session) ID() string { return s.s.ID() }

// Send adds prompt to the conversation and runs the agent until it is done. The last event is
// a [Result]. Breaking out of the loop interrupts the run; the history stays valid. Send
// returns [ErrBusy] while another Send runs.
func (s *Session) Send(ctx context.Context, prompt string) iter.Seq2[Event, error] {
	return events(s.s.Send(ctx, prompt))
}

// ErrBusy is the error of a [Session.Send] called while another one runs.
var ErrBusy = session.ErrBusy

// events turns a session's event stream into the public one.
func events(in iter.Seq2[event.Event, error]) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		for e, err := range in {
			var pub Event
			if e != nil {
				if pub = publicEvent(e); pub == nil {
					continue
				}
			}
			if !yield(pub, err) {
				return
			}
		}
	}
}

// Close ends the session, flushing its transcript. Background agents in the supervisor go
// on; their reports wait for the next session that continues this one.
func (s *Session) Close() error { return s.s.Close() }

// PermissionMode returns the current permission mode.
func (s *Session) PermissionMode() PermissionMode { return PermissionMode(s.s.PermissionMode()) }

// SetPermissionMode switches the permission mode for the calls that follow.
func (s *Session) SetPermissionMode(mode PermissionMode) error {
	return s.s.SetPermissionMode(string(mode))
}

// Model returns the model the next request uses.
func (s *Session) Model() string { return s.s.Switches().Model() }

// SetModel switches the model for the next prompt; the prompt cache starts over.
func (s *Session) SetModel(model string) { s.s.Switches().SetModel(model) }

// Usage returns the tokens used so far and their cost in US dollars.
func (s *Session) Usage() (Usage, float64) {
	u, usd := s.s.Usage()
	return publicUsage(u), usd
}

// Cwd returns the agent's current working directory.
func (s *Session) Cwd() string { return s.s.Cwd() }

// Notices returns what the user should know about opening the session — settings that did
// not load, MCP servers that failed to start, calls a crash interrupted — and clears it; the
// first Send otherwise streams them as [Notice] events.
func (s *Session) Notices() []Notice { return convert[[]Notice](s.s.Notices()) }

// ToolNames lists the tools the agent offers the model, in request order.
func (s *Session) ToolNames() []string { return s.s.ToolNames() }

func asker(f func(context.Context, PermissionRequest) PermissionAnswer) permission.Asker {
	if f == nil {
		return nil
	}
	return askerFunc(f)
}

// defaultHome is $KEEL_HOME, else ~/.keel, else nothing (no persistence).
func defaultHome() string { return runconfig.ReadEnv(nil).Home }
