package mcphost

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Status is a server's connection state.
type Status string

// Connection states.
const (
	StatusPending   Status = "pending"
	StatusConnected Status = "connected"
	StatusFailed    Status = "failed"
	StatusNeedsAuth Status = "needs-auth"
	StatusDisabled  Status = "disabled"
)

// Defaults for the zero Options.
const (
	DefaultConnectTimeout  = 30 * time.Second
	DefaultMaxOutputTokens = 25000
	DefaultRelistWait      = 2 * time.Second
	DefaultShutdownGrace   = 2 * time.Second
)

// Confined is a stdio server's hold on the sandbox it runs in (a *sandbox.Run).
type Confined interface {
	// Kill kills the server's process group, led by pgid, and what it started.
	Kill(pgid int) error
	// Release ends the hold once the server has exited.
	Release() []string
}

// Options configures a [Manager]. The zero value (plus Servers) works.
type Options struct {
	// Servers are the entries to run, after [Policy.Apply]; disabled ones are listed, not started.
	Servers []ServerConfig
	// InProcess holds Go SDK servers run in this process, by name (type "sdk" in keel's terms).
	InProcess map[string]*mcp.Server
	// Transports holds servers reached through the program driving keel (the Agent SDK's
	// in-process servers, over a [ControlTransport]), by name; also type "sdk".
	Transports map[string]mcp.Transport
	// Environ is the base environment of stdio servers (os.Environ() at the CLI), and Dir their
	// working directory.
	Environ []string
	Dir     string
	// Traceparent, if set, is asked when a stdio server starts for the TRACEPARENT it runs
	// under (telemetry), so the spans it exports join the session's trace; "" leaves the
	// environment as it is. Each tool call also carries its own span's traceparent in the
	// request's _meta (tool.Env.Traceparent).
	Traceparent func() string
	// Roots are the working directories, answered to roots/list.
	Roots []string
	// ConnectTimeout bounds each server's connection and first listing (MCP_TIMEOUT).
	ConnectTimeout time.Duration
	// ToolTimeout bounds each call (MCP_TOOL_TIMEOUT); zero means DefaultToolTimeout.
	ToolTimeout time.Duration
	// PingTimeout bounds the health check after a call timed out; zero means
	// DefaultPingTimeout.
	PingTimeout time.Duration
	// MaxOutputTokens caps a call's result (MAX_MCP_OUTPUT_TOKENS), at about 4 characters a token.
	MaxOutputTokens int
	// RelistWait bounds how long Tools waits for a relist in flight.
	RelistWait time.Duration
	// ShutdownGrace is how long a stdio server gets after stdin closes, and after SIGTERM.
	ShutdownGrace time.Duration
	// Confine, when set, rewrites a stdio server's command, not yet started, to run inside
	// keel's sandbox (sandbox.wrapMcpServers). A server it cannot confine does not start: it
	// never runs outside instead.
	Confine func(cmd *exec.Cmd) (Confined, error)
	// Reconnect is the backoff of HTTP and SSE servers that drop.
	Reconnect Backoff
	// ToolSearch configures deferral of MCP tool schemas behind ToolSearch.
	ToolSearch ToolSearchOptions
	// Elicit answers servers' elicitation requests (questions for the user). Nil means no one
	// can answer: the elicitation capability is not advertised, so servers do not ask.
	Elicit ElicitFunc
	// OAuth configures authorization for HTTP servers that ask for it.
	OAuth OAuthOptions
	// ClientName and ClientVersion are sent in initialize.
	ClientName, ClientVersion string
	Logger                    *slog.Logger
}

// Backoff is a reconnect schedule: Base, doubling up to Max, at most Attempts tries.
type Backoff struct {
	Base     time.Duration
	Max      time.Duration
	Attempts int
}

// ElicitFunc answers the elicitation/create request of the server called server: a form
// (p.RequestedSchema) or a URL to open (p.Mode "url"). It returns the action (accept, decline
// or cancel) and, for an accepted form, the content; omitted fields get the schema's defaults
// (SEP-1034) before the answer goes back. It may block until the user answers or ctx ends. The
// TUI's form, the Agent SDK's elicitation control request and the session's hooks are such
// functions.
type ElicitFunc func(ctx context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error)

// ServerStatus is one server as `keel mcp list` shows it.
type ServerStatus struct {
	Name      string   `json:"name"`
	Scope     Scope    `json:"scope"`
	Type      string   `json:"type"`
	Target    string   `json:"target"` // command line or URL
	Status    Status   `json:"status"`
	Reason    string   `json:"reason,omitempty"`
	Tools     int      `json:"tools"`
	Prompts   int      `json:"prompts"`
	Resources int      `json:"resources"`
	Server    string   `json:"server,omitempty"` // serverInfo name and version
	Warnings  []string `json:"warnings,omitempty"`
}

// Manager runs the configured servers and offers their tools by generation. It is safe for
// concurrent use. Servers can be added, removed, switched off and on while it runs (see
// runtime.go); each such change is a new generation. Close stops every server.
type Manager struct {
	opts   Options
	logger *slog.Logger

	// stop ends every server goroutine; wg waits for them.
	stop context.CancelFunc
	wg   sync.WaitGroup
	base context.Context
	// ops serialises the changes to the server set (Add, Remove, Disable, Enable), which
	// wait for servers to stop and start.
	ops sync.Mutex

	// mu guards conns, closed, gen, changed, snapshot, notes and every conn's state fields.
	mu sync.Mutex
	// conns is sorted by name. It is replaced, never changed in place, so a copy taken
	// under mu can be ranged over without it.
	conns []*conn
	// closed is set by Close: no server goroutine starts after it.
	closed   bool
	gen      uint64
	changed  chan struct{} // closed and replaced whenever gen moves or a server settles
	snapshot *generation
	notes    []string

	progress sync.Map   // progress token string → func(string)
	authMem  sync.Map   // AuthKey → token file content, when OAuth.Home is empty
	authMu   sync.Mutex // serialises token refreshes after a 401
}

// generation is the tool set of one generation, built on first use.
type generation struct {
	gen        uint64
	tools      []*mcpTool // sorted by qualified name, collisions removed
	collisions []string
}

// New builds a manager; Start connects.
func New(opts Options) *Manager {
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	if opts.MaxOutputTokens <= 0 {
		opts.MaxOutputTokens = DefaultMaxOutputTokens
	}
	if opts.ToolTimeout <= 0 {
		opts.ToolTimeout = DefaultToolTimeout
	}
	if opts.PingTimeout <= 0 {
		opts.PingTimeout = DefaultPingTimeout
	}
	if opts.RelistWait <= 0 {
		opts.RelistWait = DefaultRelistWait
	}
	if opts.ShutdownGrace <= 0 {
		opts.ShutdownGrace = DefaultShutdownGrace
	}
	if opts.Reconnect.Base <= 0 {
		opts.Reconnect = Backoff{Base: time.Second, Max: 30 * time.Second, Attempts: 5}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.ClientName == "" {
		opts.ClientName = "keel"
	}
	m := &Manager{opts: opts, logger: opts.Logger, changed: make(chan struct{})}
	names := map[string]bool{}
	for _, cfg := range opts.Servers {
		names[cfg.Name] = true
		c := newConn(m, cfg)
		if cfg.Type == TypeSDK {
			c.tr = opts.Transports[cfg.Name]
		}
		m.conns = append(m.conns, c)
	}
	for name := range opts.InProcess {
		if !names[name] {
			names[name] = true
			m.conns = append(m.conns, newConn(m, ServerConfig{Name: name, Type: TypeSDK, Scope: ScopeCLI}))
		}
	}
	for name, tr := range opts.Transports {
		if !names[name] {
			c := newConn(m, ServerConfig{Name: name, Type: TypeSDK, Scope: ScopeCLI})
			c.tr = tr
			m.conns = append(m.conns, c)
		}
	}
	slices.SortFunc(m.conns, func(a, b *conn) int { return strings.Compare(a.cfg.Name, b.cfg.Name) })
	m.base, m.stop = context.WithCancel(context.Background())
	return m
}

// Start connects every enabled server in parallel and returns when each has connected,
// failed (each bounded by ConnectTimeout) or waits for the user to sign in in the browser,
// or when ctx ends; connecting goes on after that, and a server whose sign-in completes
// joins the next generation.
func (m *Manager) Start(ctx context.Context) {
	m.mu.Lock()
	for _, c := range m.conns {
		if c.cfg.Disabled == "" {
			m.launchLocked(c)
		}
	}
	m.mu.Unlock()
	m.waitSettled(ctx, true)
}

// WaitSettled waits until no server is pending (signing-in ones included), or ctx ends.
func (m *Manager) WaitSettled(ctx context.Context) { m.waitSettled(ctx, false) }

// waitSettled waits until no server is pending; signIn counts a server that waits for the
// user to sign in as settled.
func (m *Manager) waitSettled(ctx context.Context, signIn bool) {
	for {
		m.mu.Lock()
		pending := slices.ContainsFunc(m.conns, func(c *conn) bool { return c.pendingLocked(signIn) })
		ch := m.changed
		m.mu.Unlock()
		if !pending {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// Close disconnects every server and waits for their goroutines.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.stop()
	m.wg.Wait()
	return nil
}

// Len returns how many servers are configured, whatever their state.
func (m *Manager) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.conns)
}

// Generation returns the current generation number.
func (m *Manager) Generation() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gen
}

// bump starts a new generation and wakes waiters; m.mu must be held.
func (m *Manager) bump() {
	m.gen++
	m.wake()
}

// wake wakes everyone waiting on a change; m.mu must be held.
func (m *Manager) wake() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// note queues a message for the model's next request; m.mu must be held.
func (m *Manager) note(format string, args ...any) {
	m.notes = append(m.notes, fmt.Sprintf(format, args...))
}

// awaitRelists waits (at most RelistWait) until no server has a relist pending, so the
// request being assembled sees what a list_changed announced.
func (m *Manager) awaitRelists(ctx context.Context) {
	timer := time.NewTimer(m.opts.RelistWait)
	defer timer.Stop()
	for {
		m.mu.Lock()
		busy := slices.ContainsFunc(m.conns, func(c *conn) bool { return c.relistPending() })
		ch := m.changed
		m.mu.Unlock()
		if !busy {
			return
		}
		select {
		case <-ch:
		case <-timer.C:
			m.logger.Warn("mcp relist still in flight; using the previous tool list")
			return
		case <-ctx.Done():
			return
		}
	}
}

// current returns the generation's tool set, building it if needed; m.mu must be held.
func (m *Manager) current() *generation {
	if m.snapshot != nil && m.snapshot.gen == m.gen {
		return m.snapshot
	}
	g := &generation{gen: m.gen}
	var all []*mcpTool
	for _, c := range m.conns {
		if c.live() {
			all = append(all, c.tools...)
		}
	}
	// conns are sorted by raw name, so on a collision the lexically first server keeps the name.
	slices.SortStableFunc(all, func(a, b *mcpTool) int { return strings.Compare(a.name, b.name) })
	for i, t := range all {
		if i > 0 && all[i-1].name == t.name {
			g.collisions = append(g.collisions, fmt.Sprintf("%s: tool %q of server %q collides with tool %q of server %q after normalisation; skipped",
				t.name, t.rawTool, t.server, all[i-1].rawTool, all[i-1].server))
			continue
		}
		g.tools = append(g.tools, t)
	}
	m.snapshot = g
	return g
}

// Tools returns the MCP tools of the current generation, sorted by name. If a list_changed is
// being relisted it waits for that (at most RelistWait), so the next request carries the
// change.
func (m *Manager) Tools(ctx context.Context) []tool.Tool {
	m.awaitRelists(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.current()
	out := make([]tool.Tool, len(g.tools))
	for i, t := range g.tools {
		out[i] = t
	}
	return out
}

// Lookup finds an MCP tool by its fully qualified name, including tools of a server that is
// gone: calling such a tool returns a clear error rather than "no such tool".
func (m *Manager) Lookup(name string) (tool.Tool, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range m.current().tools {
		if t.name == name {
			return t, true
		}
	}
	for _, c := range m.conns {
		if i := slices.IndexFunc(c.lastTools, func(t *mcpTool) bool { return t.name == name }); i >= 0 {
			return c.lastTools[i], true
		}
	}
	return nil, false
}

// Collisions lists the name collisions of the current generation.
func (m *Manager) Collisions() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.current().collisions)
}

// Status reports every configured server, sorted by name.
func (m *Manager) Status() []ServerStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]ServerStatus, 0, len(m.conns))
	for _, c := range m.conns {
		out = append(out, c.statusLocked())
	}
	return out
}

// Instructions is one server's instructions for the system prompt.
type Instructions struct {
	Server string
	Text   string
}

// Instructions returns the instructions of the connected servers, sorted by server name. They
// belong in the uncached MCP-instructions section of the system prompt: they change when
// servers connect.
func (m *Manager) Instructions() []Instructions {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Instructions
	for _, c := range m.conns {
		if c.live() && strings.TrimSpace(c.instructions) != "" {
			out = append(out, Instructions{Server: c.cfg.Name, Text: c.instructions})
		}
	}
	return out
}

// RenderInstructions renders instructions as a system-prompt section; "" for none.
func RenderInstructions(ins []Instructions) string {
	if len(ins) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("# MCP Server Instructions\n\nThe following MCP servers have provided instructions for how to use their tools and resources:\n")
	for _, in := range ins {
		fmt.Fprintf(&b, "\n## %s\n%s\n", in.Server, strings.TrimSpace(in.Text))
	}
	return b.String()
}

// Observe returns what changed since the last call (servers lost or back, tool lists that
// changed, declined elicitations) as text for the next request. It satisfies loop.Observer.
func (m *Manager) Observe(ctx context.Context) []message.Block {
	m.awaitRelists(ctx)
	m.mu.Lock()
	notes := m.notes
	m.notes = nil
	m.mu.Unlock()
	if len(notes) == 0 {
		return nil
	}
	return []message.Block{message.Text("<system-reminder>\n" + strings.Join(notes, "\n") + "\n</system-reminder>")}
}

// Reconnect restarts the server called name and waits until it has connected or failed, or
// ctx ends.
func (m *Manager) Reconnect(ctx context.Context, name string) error {
	c := m.find(name)
	if c == nil {
		return fmt.Errorf("reconnect %s: no such MCP server", name)
	}
	if c.cfg.Disabled != "" {
		return fmt.Errorf("reconnect %s: server is disabled: %s", name, c.cfg.Disabled)
	}
	m.mu.Lock()
	if c.off {
		m.mu.Unlock()
		return fmt.Errorf("reconnect %s: server is switched off for this session; switch it on instead", name)
	}
	c.status, c.reason = StatusPending, ""
	running := c.cancel != nil
	m.launchLocked(c)
	m.wake()
	m.mu.Unlock()
	if running {
		select {
		case c.reconnect <- struct{}{}:
		default:
		}
	}
	m.WaitSettled(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	if c.status != StatusConnected {
		return fmt.Errorf("reconnect %s: %s: %s", name, c.status, c.reason)
	}
	return nil
}

// find returns the server called name, or nil.
func (m *Manager) find(name string) *conn {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i := slices.IndexFunc(m.conns, func(c *conn) bool { return c.cfg.Name == name }); i >= 0 {
		return m.conns[i]
	}
	return nil
}
