package lsp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/keel-dev/keel/internal/procgroup"
)

// state is where a server is in its life.
type state int

const (
	stopped  state = iota // never started, or waiting out a backoff after a failure
	starting              // process started, initialize not answered yet
	running
	disabled // not installed, or crashed more often than it may restart
)

// Restart backoff: 1 s, 2 s, 4 s … capped.
const (
	backoffBase = time.Second
	backoffMax  = 30 * time.Second
)

// client is one language server process and the documents it has open.
type client struct {
	m   *Manager
	cfg Config

	// sendMu serialises what is sent, so versions reach the server in order.
	sendMu sync.Mutex

	// mu guards the fields below.
	mu    sync.Mutex
	state state
	gen   int // counts processes, so events of a dead one are ignored
	ready chan struct{}
	err   error // why the last start failed or the process ended
	// killed is why keel killed the running process, if it did (it hung).
	killed error
	// slow is set once an edit gave up waiting for the current start.
	slow     bool
	noted    bool // err was reported in a Report
	restarts int
	retryAt  time.Time
	conn     jsonrpc2.Conn
	proc     *os.Process
	// run is the current process's hold on the sandbox (Options.Confine); nil outside it.
	run    Confined
	exited chan struct{} // closed when the current process is gone
	docs   map[string]*document
}

// document is a file as the server knows it.
type document struct {
	open      bool
	version   int
	diags     []Diagnostic
	published int // publishDiagnostics received
	// pubVersion is the version the last diagnostics were for; -1 when the server gave none.
	pubVersion int
	changed    chan struct{} // closed and replaced at every publish
}

func newClient(m *Manager, cfg Config) *client {
	return &client{m: m, cfg: cfg, docs: map[string]*document{}}
}

func (c *client) startupTimeout() time.Duration {
	if c.cfg.StartupTimeout > 0 {
		return c.cfg.StartupTimeout
	}
	return 30 * time.Second
}

func (c *client) maxRestarts() int {
	if c.cfg.MaxRestarts > 0 {
		return c.cfg.MaxRestarts
	}
	return 3
}

var errNotRunning = errors.New("not running")

// waitReady starts the server if it is not running (and not in backoff) and waits for it to
// be initialised, at most until ctx ends. The start goes on in the background either way.
func (c *client) waitReady(ctx context.Context) error {
	closed := c.m.isClosed()
	c.mu.Lock()
	switch c.state {
	case running:
		c.mu.Unlock()
		return nil
	case disabled:
		c.mu.Unlock()
		return errNotRunning
	case stopped:
		if c.m.opts.Now().Before(c.retryAt) || closed {
			c.mu.Unlock()
			return errNotRunning
		}
		c.state, c.ready, c.slow = starting, make(chan struct{}), false
		c.gen++
		gen := c.gen
		c.m.wg.Go(func() { c.start(gen) })
	}
	ready := c.ready
	c.mu.Unlock()
	select {
	case <-ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != running {
		return errNotRunning
	}
	return nil
}

// markSlow records, when the server is still starting, that an edit gave up waiting for it.
func (c *client) markSlow() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != starting {
		return false
	}
	c.slow = true
	return true
}

// slowStart reports whether the server is still in a start an edit already waited for.
func (c *client) slowStart() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state == starting && c.slow
}

// pipe joins the server's stdout and stdin into the connection's stream.
type pipe struct {
	io.ReadCloser
	w io.WriteCloser
}

func (p pipe) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p pipe) Close() error {
	err := p.w.Close()
	return errors.Join(err, p.ReadCloser.Close())
}

// start runs process gen of the server and initialises it.
func (c *client) start(gen int) {
	logger := c.m.opts.Logger.With("lsp", c.cfg.Name)
	cmd := exec.Command(c.cfg.Command, c.cfg.Args...)
	cmd.Dir = c.root()
	cmd.Env = append(slices.Clone(c.m.opts.Environ), envList(c.cfg.Env)...)
	if cmd.Err != nil { // not found: said as such, not as a sandbox that cannot start it
		c.startFailed(gen, cmd.Err)
		return
	}
	var run Confined
	if c.m.opts.Confine != nil {
		r, err := c.m.opts.Confine(cmd)
		if err != nil {
			c.failed(gen, fmt.Errorf("%s cannot start in the sandbox, and language servers do not run outside it unless sandbox.wrapLspServers is false: %w", c.cfg.Command, err), true)
			return
		}
		run = r
	}
	release := func() {
		if run != nil {
			run.Release()
		}
	}
	procgroup.Own(cmd)
	stderr := &tail{max: 4 << 10}
	cmd.Stderr = stderr
	stdin, err1 := cmd.StdinPipe()
	stdout, err2 := cmd.StdoutPipe()
	if err := errors.Join(err1, err2); err != nil {
		release()
		c.failed(gen, fmt.Errorf("start %s: %w", c.cfg.Command, err), false)
		return
	}
	if err := cmd.Start(); err != nil {
		release()
		c.startFailed(gen, err)
		return
	}
	conn := jsonrpc2.NewConn(jsonrpc2.NewStream(pipe{ReadCloser: stdout, w: stdin}))
	conn.Go(context.Background(), c.handler(gen))
	exited := make(chan struct{})
	c.mu.Lock()
	c.conn, c.proc, c.run, c.exited = conn, cmd.Process, run, exited
	if c.state == disabled { // Close came while the process was starting
		killGroup(cmd.Process, run)
	}
	c.mu.Unlock()
	c.m.wg.Go(func() {
		err := cmd.Wait()
		release()
		close(exited)
		_ = conn.Close()
		c.processEnded(gen, err, stderr.String())
	})
	ctx, cancel := context.WithTimeout(context.Background(), c.startupTimeout())
	defer cancel()
	var result json.RawMessage
	if _, err := conn.Call(ctx, "initialize", c.initializeParams(run != nil), &result); err != nil {
		if ctx.Err() == nil {
			// The server most likely died: its exit status and stderr say why better
			// than the broken pipe does (processEnded reports them).
			select {
			case <-exited:
				return
			case <-time.After(time.Second):
			}
		} else {
			err = fmt.Errorf("%s did not answer initialize within %s", c.cfg.Name, c.startupTimeout())
		}
		logger.Warn("language server failed to initialise", "err", err)
		c.failed(gen, err, false)
		c.kill(gen)
		return
	}
	if err := conn.Notify(ctx, "initialized", struct{}{}); err != nil {
		c.failed(gen, fmt.Errorf("%s: initialized: %w", c.cfg.Name, err), false)
		c.kill(gen)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen == gen && c.state == starting {
		c.state, c.restarts, c.noted = running, 0, false
		close(c.ready)
		logger.Info("language server started", "command", c.cfg.Command)
	}
}

// startFailed records that process gen could not be started; a server that is not
// installed is not retried.
func (c *client) startFailed(gen int, err error) {
	notInstalled := errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist)
	if notInstalled {
		err = fmt.Errorf("%s is not installed (%w)", c.cfg.Command, err)
	}
	c.failed(gen, err, notInstalled)
}

// initializeParams are the initialize request's. A confined server is told no process id:
// keel's is not in the sandbox's PID namespace, and servers built on vscode-languageserver
// exit when the process they are given cannot be signalled (their parent died, they think).
func (c *client) initializeParams(confined bool) initializeParams {
	root := c.root()
	pid := os.Getpid()
	p := initializeParams{
		ProcessID:             &pid,
		ClientInfo:            clientInfo{Name: "keel"},
		RootURI:               fileURI(root),
		InitializationOptions: c.cfg.InitializationOptions,
		WorkspaceFolders:      []workspaceFolder{{URI: fileURI(root), Name: filepath.Base(root)}},
	}
	p.Capabilities.Workspace.Configuration = true
	p.Capabilities.Workspace.WorkspaceFolders = true
	p.Capabilities.TextDocument.Synchronization.DidSave = true
	p.Capabilities.TextDocument.PublishDiagnostics.VersionSupport = true
	p.Capabilities.General.PositionEncodings = []string{"utf-16"}
	if confined {
		p.ProcessID = nil
	}
	return p
}

func (c *client) root() string {
	if c.cfg.WorkspaceFolder != "" {
		return c.cfg.WorkspaceFolder
	}
	return c.m.opts.Root
}

// failed records that process gen failed; a server that is not installed is not retried.
func (c *client) failed(gen int, err error, permanent bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen || c.state == disabled {
		return
	}
	was := c.state
	c.err, c.noted = err, false
	c.setDown(permanent)
	if was == starting {
		close(c.ready)
	}
}

// setDown moves a failed server to backoff, or disables it; c.mu is held.
func (c *client) setDown(permanent bool) {
	for _, d := range c.docs {
		d.open = false
	}
	if permanent || c.cfg.NoRestart || c.restarts >= c.maxRestarts() {
		c.state = disabled
		return
	}
	c.state = stopped
	c.retryAt = c.m.opts.Now().Add(min(backoffBase<<c.restarts, backoffMax))
	c.restarts++
}

// processEnded handles the exit of process gen: expected at shutdown, a crash otherwise.
func (c *client) processEnded(gen int, err error, stderr string) {
	closed := c.m.isClosed()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen || closed {
		return
	}
	switch c.state {
	case running:
		msg := fmt.Sprintf("%s exited unexpectedly (%v)", c.cfg.Name, err)
		if s := strings.TrimSpace(stderr); s != "" {
			msg += ": " + lastLine(s)
		}
		c.err, c.noted = errors.New(msg), false
		if c.killed != nil {
			c.err, c.killed = c.killed, nil
		}
		c.m.opts.Logger.Warn("language server crashed", "lsp", c.cfg.Name, "err", err, "stderr", stderr)
		c.setDown(false)
	case starting:
		msg := fmt.Sprintf("%s exited during start-up (%v)", c.cfg.Name, err)
		if s := strings.TrimSpace(stderr); s != "" {
			msg += ": " + lastLine(s)
		}
		c.err, c.noted = errors.New(msg), false
		c.setDown(false)
		close(c.ready)
	}
}

// kill ends process gen and its children.
func (c *client) kill(gen int) {
	c.mu.Lock()
	p, run := c.proc, c.run
	same := c.gen == gen
	c.mu.Unlock()
	if same && p != nil {
		killGroup(p, run)
	}
}

// takeNote returns why the server is not available, once per failure.
func (c *client) takeNote() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil || c.noted {
		return ""
	}
	c.noted = true
	note := fmt.Sprintf("diagnostics for %s files are unavailable: %v", strings.Join(slices.Sorted(maps.Keys(c.cfg.Extensions)), ", "), c.err)
	switch c.state {
	case stopped:
		note += fmt.Sprintf("; keel restarts it in %s", c.retryAt.Sub(c.m.opts.Now()).Round(time.Second))
	case disabled:
		note += "; it is off for this session"
	}
	return note
}

// handler answers what the server asks and takes the diagnostics it publishes.
func (c *client) handler(gen int) jsonrpc2.Handler {
	return func(ctx context.Context, req *jsonrpc2.Request) (any, error) {
		switch req.Method() {
		case "textDocument/publishDiagnostics":
			var p publishDiagnosticsParams
			if err := json.Unmarshal(req.Params(), &p); err == nil {
				c.publish(gen, p)
			}
			return nil, nil
		case "workspace/configuration":
			var p configurationParams
			_ = json.Unmarshal(req.Params(), &p)
			return c.configuration(p), nil
		case "workspace/workspaceFolders":
			root := c.root()
			return []workspaceFolder{{URI: fileURI(root), Name: filepath.Base(root)}}, nil
		case "client/registerCapability", "client/unregisterCapability", "window/workDoneProgress/create",
			"window/showMessageRequest", "window/showDocument", "workspace/diagnostic/refresh",
			"workspace/semanticTokens/refresh", "workspace/inlayHint/refresh", "workspace/codeLens/refresh":
			return nil, nil
		case "workspace/applyEdit":
			return map[string]any{"applied": false, "failureReason": "keel does not apply edits from language servers"}, nil
		}
		if !req.IsCall() {
			return nil, nil // logs, progress, telemetry: nothing keel shows
		}
		return nil, jsonrpc2.ErrMethodNotFound
	}
}

// configuration answers workspace/configuration from the settings object: each section
// looked up by its dotted path, the whole object for an empty one, null when absent.
func (c *client) configuration(p configurationParams) []any {
	var all map[string]any
	_ = json.Unmarshal(c.cfg.Settings, &all)
	out := make([]any, len(p.Items))
	for i, it := range p.Items {
		if it.Section == "" {
			out[i] = all
			continue
		}
		var v any = all
		for _, part := range strings.Split(it.Section, ".") {
			obj, ok := v.(map[string]any)
			if !ok {
				v = nil
				break
			}
			v = obj[part]
		}
		out[i] = v
	}
	return out
}

func (c *client) doc(path string) *document {
	d := c.docs[path]
	if d == nil {
		d = &document{pubVersion: -1, changed: make(chan struct{})}
		c.docs[path] = d
	}
	return d
}

func (c *client) publish(gen int, p publishDiagnosticsParams) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	d := c.doc(uriPath(p.URI))
	d.diags = fromLSP(p.Diagnostics)
	d.published++
	d.pubVersion = -1
	if p.Version != nil {
		d.pubVersion = *p.Version
	}
	close(d.changed)
	d.changed = make(chan struct{})
}

// current returns the diagnostics path has now.
func (c *client) current(path string) []Diagnostic {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := c.docs[path]; d != nil {
		return slices.Clone(d.diags)
	}
	return nil
}

// published returns path's diagnostics once they are for version or later.
func (c *client) published(path string, version int) ([]Diagnostic, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.docs[path]
	if d == nil || d.published == 0 || (d.pubVersion >= 0 && d.pubVersion < version) {
		return nil, false
	}
	return slices.Clone(d.diags), true
}

// open opens path at its content on disk ([readText]), unless it is open already.
func (c *client) open(path string) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	c.mu.Lock()
	d, conn, gen := c.doc(path), c.conn, c.gen
	if d.open || c.state != running {
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	text, err := readText(path)
	if err != nil {
		return
	}
	c.mu.Lock()
	d.open, d.version = true, d.version+1
	v := d.version
	c.mu.Unlock()
	c.send(gen, conn, "textDocument/didOpen", didOpenParams{TextDocument: textDocumentItem{
		URI: fileURI(path), LanguageID: c.language(path), Version: v, Text: string(text)}})
}

// sync sends path's content on disk ([readText]) as its next version (opening it first if needed) and
// returns the version and the publish count before it. The sending goes on in the
// background when ctx ends first (a hung server is killed by the send's watchdog).
func (c *client) sync(ctx context.Context, path string) (version, mark int, err error) {
	text, err := readText(path)
	if err != nil {
		return 0, 0, fmt.Errorf("read %s: %w", path, err)
	}
	type sent struct {
		version, mark int
		err           error
	}
	done := make(chan sent, 1)
	c.m.wg.Go(func() {
		c.sendMu.Lock()
		defer c.sendMu.Unlock()
		c.mu.Lock()
		if c.state != running {
			c.mu.Unlock()
			done <- sent{err: errNotRunning}
			return
		}
		d, conn, gen := c.doc(path), c.conn, c.gen
		wasOpen := d.open
		d.open, d.version = true, d.version+1
		r := sent{version: d.version, mark: d.published}
		c.mu.Unlock()
		uri := fileURI(path)
		if wasOpen {
			r.err = c.send(gen, conn, "textDocument/didChange", didChangeParams{
				TextDocument: versionedDocument{URI: uri, Version: r.version}, ContentChanges: []contentChange{{Text: string(text)}}})
		} else {
			r.err = c.send(gen, conn, "textDocument/didOpen", didOpenParams{TextDocument: textDocumentItem{
				URI: uri, LanguageID: c.language(path), Version: r.version, Text: string(text)}})
		}
		if r.err == nil {
			r.err = c.send(gen, conn, "textDocument/didSave", didSaveParams{TextDocument: documentID{URI: uri}, Text: string(text)})
		}
		done <- r
	})
	select {
	case r := <-done:
		return r.version, r.mark, r.err
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
}

// hangTimeout is how long one write to a server may block before it is taken for hung (it
// stopped reading its input) and killed.
func (c *client) hangTimeout() time.Duration { return c.startupTimeout() }

// send writes a notification; a server that does not take it within hangTimeout is killed,
// which also ends the write.
func (c *client) send(gen int, conn jsonrpc2.Conn, method string, params any) error {
	watchdog := time.AfterFunc(c.hangTimeout(), func() {
		c.mu.Lock()
		if c.gen == gen {
			c.killed = fmt.Errorf("%s stopped reading its input (hung) and was killed", c.cfg.Name)
		}
		c.mu.Unlock()
		c.kill(gen)
	})
	defer watchdog.Stop()
	return conn.Notify(context.Background(), method, params)
}

// waitDiagnostics waits until the server publishes path's diagnostics for version (or, when
// it sends no versions, publishes after mark), at most until ctx ends.
func (c *client) waitDiagnostics(ctx context.Context, path string, version, mark int) ([]Diagnostic, bool) {
	for {
		c.mu.Lock()
		d := c.doc(path)
		if d.published > mark && (d.pubVersion < 0 || d.pubVersion >= version) {
			diags := slices.Clone(d.diags)
			c.mu.Unlock()
			return diags, true
		}
		changed := d.changed
		c.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, false
		}
	}
}

func (c *client) language(path string) string {
	ext := strings.ToLower(filepath.Ext(path))
	for e, lang := range c.cfg.Extensions {
		if strings.ToLower(e) == ext {
			return lang
		}
	}
	return strings.TrimPrefix(ext, ".")
}

// shutdown asks a running server to shut down and exit, and kills it when it does not.
func (c *client) shutdown() {
	c.mu.Lock()
	conn, proc, run, exited, st := c.conn, c.proc, c.run, c.exited, c.state
	c.state = disabled
	if st == starting {
		close(c.ready)
	}
	c.mu.Unlock()
	if proc == nil {
		return
	}
	timeout := c.cfg.ShutdownTimeout
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if st == running {
		if _, err := conn.Call(ctx, "shutdown", nil, nil); err == nil {
			_ = conn.Notify(ctx, "exit", nil)
		}
	}
	select {
	case <-exited:
	case <-ctx.Done():
		killGroup(proc, run)
		<-exited
	}
}

func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// tail keeps the last bytes written to it: a server's stderr, for crash messages.
type tail struct {
	max int
	// mu guards buf.
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.ToValidUTF8(t.buf, []byte("?")))
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// killGroup kills the server and the processes it started (typescript-language-server runs
// tsserver under node), through the sandbox it runs in when it has one.
func killGroup(p *os.Process, run Confined) {
	if run != nil {
		_ = run.Kill(p.Pid)
	} else {
		_ = procgroup.Kill(p.Pid)
	}
	_ = p.Kill()
}
