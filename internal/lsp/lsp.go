// Package lsp runs the language servers named in settings (gopls, pyright,
// typescript-language-server, rust-analyzer, …) so that edits come back with the problems they
// introduced. A server starts lazily over stdio the first time a file of its language is read
// or edited; every Edit, Write or NotebookEdit is synced to it as a whole document; the new
// diagnostics of the edited file — at most [MaxPerFile], errors first — are returned within a
// short wait, or handed over later at a request boundary. A server that crashes or hangs is
// killed and restarted with backoff; nothing here blocks the agent loop past the wait.
//
// The wire protocol (Content-Length framing, JSON-RPC 2.0 calls in both directions) is
// go.lsp.dev/jsonrpc2; the handful of LSP messages keel uses are in protocol.go.
package lsp

import (
	"context"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Config is one language server, as the lspServers setting describes it.
type Config struct {
	Name    string
	Command string
	Args    []string
	Env     map[string]string
	// Extensions maps file extensions (".go") to LSP language ids ("go").
	Extensions            map[string]string
	InitializationOptions []byte
	// Settings answer the server's workspace/configuration requests (each requested section
	// is looked up in it; the whole object when no section is named).
	Settings []byte
	// WorkspaceFolder is the root the server works in; empty means [Options.Root].
	WorkspaceFolder string
	// StartupTimeout bounds start-up and the initialize handshake; 0 means 30 s.
	StartupTimeout time.Duration
	// ShutdownTimeout bounds a clean shutdown at Close; 0 means 2 s.
	ShutdownTimeout time.Duration
	// NoRestart leaves a crashed server stopped; MaxRestarts bounds restarts (0 means 3).
	NoRestart   bool
	MaxRestarts int
}

// Options configure a Manager.
type Options struct {
	Servers []Config
	// Root is the workspace directory (the project root).
	Root string
	// Environ is the environment servers start with; nil means none beyond Config.Env.
	Environ []string
	// Wait bounds how long After waits for the diagnostics of an edit; 0 means 3 s.
	Wait time.Duration
	// Now is the clock of restart backoff; nil is time.Now.
	Now func() time.Time
	// Confine, when set, rewrites a server's command, not yet started, to run inside keel's
	// sandbox (sandbox.wrapLspServers): a server loads code from the workspace — the
	// project's node_modules/typescript, its build scripts — which sandboxed commands can
	// write. A server it cannot confine does not start: it never runs outside instead.
	Confine func(cmd *exec.Cmd) (Confined, error)
	Logger  *slog.Logger
}

// Confined is a server's hold on the sandbox it runs in (a *sandbox.Run).
type Confined interface {
	// Kill kills the server's process group, led by pgid, and what it started.
	Kill(pgid int) error
	// Release ends the hold once the server has exited.
	Release() []string
}

// DefaultWait is how long After waits for an edit's diagnostics by default.
const DefaultWait = 3 * time.Second

// Manager owns the language servers of a session. It is safe for concurrent use.
type Manager struct {
	opts    Options
	clients []*client
	byExt   map[string]*client
	// wg tracks every goroutine the manager starts; Close waits for them.
	wg sync.WaitGroup

	// mu guards watches and closed.
	mu      sync.Mutex
	watches map[watchKey]*watch
	closed  bool
}

type watchKey struct{ agent, path string }

// watch is an edited file whose diagnostics are still of interest: the baseline they are
// measured against, what was already reported, and the version they must be for.
type watch struct {
	client   *client
	baseline []Diagnostic
	reported []Diagnostic
	version  int
	// published says diagnostics for version arrived and were reported once.
	published bool
	// until is when the watch ends: later passes of the server are handed over until then.
	until time.Time
}

// lateWindow is how long after an edit its file's later diagnostics (a server's slower
// second pass, or a first pass that missed the wait) are still handed over.
const lateWindow = 30 * time.Second

// New returns a Manager; no server starts until a file of its language is used.
func New(opts Options) *Manager {
	if opts.Wait <= 0 {
		opts.Wait = DefaultWait
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Manager{opts: opts, byExt: map[string]*client{}, watches: map[watchKey]*watch{}}
	for _, cfg := range opts.Servers {
		c := newClient(m, cfg)
		m.clients = append(m.clients, c)
		for ext := range cfg.Extensions {
			ext = strings.ToLower(ext)
			if _, taken := m.byExt[ext]; !taken {
				m.byExt[ext] = c
			}
		}
	}
	return m
}

func (m *Manager) clientFor(path string) *client {
	if m == nil {
		return nil
	}
	return m.byExt[strings.ToLower(filepath.Ext(path))]
}

// Handles reports whether a server is configured for path's language.
func (m *Manager) Handles(path string) bool { return m.clientFor(path) != nil }

// Touch says path was read: its server starts in the background and opens the file, so its
// diagnostics before an edit are known. It returns at once.
func (m *Manager) Touch(path string) {
	c := m.clientFor(path)
	if c == nil || m.isClosed() {
		return
	}
	m.wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.startupTimeout())
		defer cancel()
		if c.waitReady(ctx) == nil {
			c.open(path)
		}
	})
}

// Before records the diagnostics path has now, for agent: what its next After measures new
// problems against. It returns at once.
func (m *Manager) Before(agent, path string) {
	c := m.clientFor(path)
	if c == nil {
		return
	}
	base := c.current(path)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.watches[watchKey{agent, path}] = &watch{client: c, baseline: base, reported: base}
}

// Report is what After found.
type Report struct {
	// Files are the new diagnostics, one entry per file that has some.
	Files []FileDiagnostics
	// Note explains, once per failure, why diagnostics are missing: a server that is not
	// installed, failed to start or crashed.
	Note string
}

// After syncs path's content on disk to its server and returns the diagnostics the edit
// introduced, waiting at most [Options.Wait]; what arrives later is handed over by [Late].
func (m *Manager) After(ctx context.Context, agent, path string) Report {
	c := m.clientFor(path)
	if c == nil || m.isClosed() {
		return Report{}
	}
	if c.slowStart() {
		// An earlier edit already waited for this start; this one does not wait again.
		m.syncWhenReady(agent, path, c)
		return Report{}
	}
	ctx, cancel := context.WithTimeout(ctx, m.opts.Wait)
	defer cancel()
	if err := c.waitReady(ctx); err != nil {
		if c.markSlow() {
			// Still starting (a large workspace loads for a while): the file is synced once
			// the server is up, and its diagnostics come at a later boundary.
			m.syncWhenReady(agent, path, c)
			return Report{}
		}
		return Report{Note: c.takeNote()}
	}
	version, mark, err := c.sync(ctx, path)
	if err != nil {
		m.opts.Logger.Debug("lsp sync", "server", c.cfg.Name, "path", path, "err", err)
		return Report{Note: c.takeNote()}
	}
	key := watchKey{agent, path}
	m.mu.Lock()
	w := m.watches[key]
	if w == nil || w.client != c {
		w = &watch{client: c}
		m.watches[key] = w
	}
	w.version, w.published, w.until = version, false, m.opts.Now().Add(lateWindow)
	m.mu.Unlock()
	diags, ok := c.waitDiagnostics(ctx, path, version, mark)
	if !ok {
		return Report{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	news := newSince(w.baseline, diags)
	w.reported, w.published = diags, true
	if len(news) == 0 {
		return Report{}
	}
	return Report{Files: []FileDiagnostics{limit(path, news)}}
}

// syncWhenReady syncs path in the background once its server has started, so [Late] hands
// over the edit's diagnostics.
func (m *Manager) syncWhenReady(agent, path string, c *client) {
	if m.isClosed() {
		return
	}
	m.wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.startupTimeout())
		defer cancel()
		if c.waitReady(ctx) != nil {
			return
		}
		version, _, err := c.sync(ctx, path)
		if err != nil {
			return
		}
		key := watchKey{agent, path}
		m.mu.Lock()
		defer m.mu.Unlock()
		w := m.watches[key]
		if w == nil || w.client != c {
			w = &watch{client: c}
			m.watches[key] = w
		}
		w.version, w.published, w.until = version, false, m.opts.Now().Add(lateWindow)
	})
}

// Late returns agent's diagnostics that arrived after After stopped waiting (or a server's
// later pass), once each, for edits of the last 30 seconds. The loop asks at every request
// boundary; tool results of the agent carry them too.
func (m *Manager) Late(agent string) []FileDiagnostics {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.opts.Now()
	var out []FileDiagnostics
	for key, w := range m.watches {
		if key.agent != agent || w.version == 0 {
			continue
		}
		if now.After(w.until) {
			delete(m.watches, key)
			continue
		}
		diags, ok := w.client.published(key.path, w.version)
		if !ok {
			continue
		}
		ref := w.reported
		if !w.published {
			ref = w.baseline
		}
		if news := newSince(ref, diags); len(news) > 0 {
			out = append(out, limit(key.path, news))
		}
		w.reported, w.published = diags, true
	}
	return out
}

// Publishes counts the diagnostics path's server has published for it: tests wait on it
// instead of on time.
func (m *Manager) Publishes(path string) int {
	c := m.clientFor(path)
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := c.docs[path]; d != nil {
		return d.published
	}
	return 0
}

func (m *Manager) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// Close shuts the servers down (shutdown and exit, then a kill for those that do not go) and
// waits for everything the manager started.
func (m *Manager) Close() {
	if m == nil {
		return
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range m.clients {
		wg.Go(c.shutdown)
	}
	wg.Wait()
	m.wg.Wait()
}
