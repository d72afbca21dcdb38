package mcphost

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TypeSDK marks a Go SDK server run in this process (Options.InProcess); files cannot name it.
const TypeSDK = "sdk"

// ProtocolVersion is the MCP version keel asks for. 2026-07-28 (stateless, subscriptions/listen)
// is newer than what most servers speak; 2025-11-25 delivers server-initiated messages over
// streamable HTTP on the standalone SSE stream.
const ProtocolVersion = "2025-11-25"

// conn is one configured server. Its state fields are guarded by the manager's mu.
type conn struct {
	m      *Manager
	cfg    ServerConfig
	logger *slog.Logger
	// reconnect asks the run loop to reconnect now (buffered 1); relist to relist (buffered 1).
	reconnect chan struct{}
	relist    chan struct{}

	// tr reaches a server in the driving program (an Agent SDK's in-process server); nil
	// for the other types. Set before the conn is shared.
	tr mcp.Transport

	// Guarded by m.mu:
	// cancel ends the goroutine running the server (nil when none runs) and done is closed
	// when it has returned; see launchLocked and halt.
	cancel context.CancelFunc
	done   chan struct{}
	// off: switched off for this session ([Manager.Disable]): its process is stopped, its
	// status reads disabled and its tools are gone until [Manager.Enable].
	off          bool
	status       Status
	reason       string
	session      *mcp.ClientSession
	epoch        int // counts sessions; events of an old session are ignored
	closing      bool
	tools        []*mcpTool
	lastTools    []*mcpTool // the tools before the server was lost, for clear errors
	prompts      []*mcp.Prompt
	resources    []*mcp.Resource
	instructions string
	serverInfo   string
	warnings     []string
	dirty        uint64 // list_changed notifications seen
	listed       uint64 // dirty value the last finished relist covered
	proc         *process
	floodCount   int
	floodStart   time.Time
	login        *loginState // set while `keel mcp login` reconnects the server
	// unhealthy: the session was closed because the server stopped answering pings; its
	// reason says so and is kept when the process then exits.
	unhealthy bool
	// deadline ends the connection attempt in progress (nil between attempts); signIn is the
	// authorization page the attempt waits on the user for, if it does.
	deadline *time.Timer
	signIn   string
	// authFailure is why the attempt's authorization failed, which the SDK may report only
	// as the end of the attempt's context.
	authFailure error
}

// errConnectTimeout is the cause of a connection attempt that ran out of time.
var errConnectTimeout = errors.New("connect timeout")

func newConn(m *Manager, cfg ServerConfig) *conn {
	c := &conn{m: m, cfg: cfg, logger: m.logger.With("server", cfg.Name),
		reconnect: make(chan struct{}, 1), relist: make(chan struct{}, 1), status: StatusPending}
	if cfg.Disabled != "" {
		c.status, c.reason = StatusDisabled, cfg.Disabled
	}
	return c
}

func (c *conn) relistPending() bool { return c.live() && c.dirty != c.listed }

// live reports whether the server is connected and on; m.mu must be held.
func (c *conn) live() bool { return c.status == StatusConnected && !c.off }

// pendingLocked reports whether the server is still connecting; signIn counts one that waits
// for the user to sign in as settled. m.mu must be held.
func (c *conn) pendingLocked(signIn bool) bool {
	return !c.off && c.status == StatusPending && (!signIn || c.signIn == "")
}

func (c *conn) statusLocked() ServerStatus {
	s := ServerStatus{Name: c.cfg.Name, Scope: c.cfg.Scope, Type: c.cfg.Type, Target: target(c.cfg),
		Status: c.status, Reason: c.reason, Server: c.serverInfo, Warnings: slices.Clone(c.warnings)}
	if c.status == StatusPending && c.signIn != "" {
		s.Reason = "waiting for you to sign in: " + c.signIn
	}
	if c.off {
		s.Status, s.Reason = StatusDisabled, reasonOff
	}
	if c.live() {
		s.Tools, s.Prompts, s.Resources = len(c.tools), len(c.prompts), len(c.resources)
	}
	return s
}

func target(cfg ServerConfig) string {
	if cfg.Type == TypeStdio {
		return strings.Join(append([]string{cfg.Command}, cfg.Args...), " ")
	}
	return cfg.URL
}

// run owns the server's sessions until ctx ends: connect, serve relists, and on loss either
// reconnect with backoff (HTTP, SSE) or wait for an explicit Reconnect (stdio, whose exit is
// usually a bug or a missing dependency that retrying would not fix).
func (c *conn) run(ctx context.Context) {
	attempt := 0
	for {
		sess, err := c.connect(ctx)
		if ctx.Err() != nil {
			if sess != nil {
				c.closeSession(sess)
			}
			return
		}
		if err == nil {
			attempt = 0
			lost := c.serve(ctx, sess)
			if !lost {
				return
			}
		} else {
			c.fail(err)
		}
		retry := c.cfg.Type == TypeHTTP || c.cfg.Type == TypeSSE
		var wait <-chan time.Time
		if retry && attempt < c.m.opts.Reconnect.Attempts && !c.needsAuth() {
			d := c.m.opts.Reconnect.Base << attempt
			if d > c.m.opts.Reconnect.Max || d <= 0 {
				d = c.m.opts.Reconnect.Max
			}
			attempt++
			c.logger.Info("mcp server reconnecting", "in", d, "attempt", attempt)
			wait = time.After(d)
		}
		select {
		case <-ctx.Done():
			return
		case <-c.reconnect:
			attempt = 0
		case <-wait:
		}
		c.m.mu.Lock()
		c.status, c.reason = StatusPending, ""
		c.m.wake()
		c.m.mu.Unlock()
	}
}

func (c *conn) needsAuth() bool {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	return c.status == StatusNeedsAuth
}

// connect opens a session and lists what the server offers, all within ConnectTimeout.
func (c *conn) connect(ctx context.Context) (*mcp.ClientSession, error) {
	timeout := c.m.opts.ConnectTimeout
	if c.loginState() != nil {
		// The user is in the browser.
		timeout = max(timeout, c.m.opts.OAuth.loginTimeout())
	}
	// The limit is a timer rather than a context deadline so it can grow while the user
	// signs in (see signingIn).
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := time.AfterFunc(timeout, func() { cancel(errConnectTimeout) })
	defer func() {
		timer.Stop()
		c.m.mu.Lock()
		c.deadline, c.signIn = nil, ""
		c.m.mu.Unlock()
	}()
	c.m.mu.Lock()
	c.deadline, c.authFailure = timer, nil
	c.epoch++
	epoch := c.epoch
	c.closing = false
	c.m.mu.Unlock()
	tr, err := c.transport(cctx)
	if err != nil {
		return nil, err
	}
	// The streamable HTTP connection must reach the SDK unwrapped: the SDK opens the standalone
	// SSE stream (which carries list_changed and every other server-initiated message) through
	// an unexported method of its own connection type, which a wrapper hides. Such sessions
	// record list_changed in the SDK's handlers instead; across HTTP streams the notification
	// and the response of the call that caused it are not ordered anyway.
	watched := c.cfg.Type != TypeHTTP
	client := mcp.NewClient(&mcp.Implementation{Name: c.m.opts.ClientName, Version: c.m.opts.ClientVersion}, c.clientOptions(epoch, watched))
	var roots []*mcp.Root
	for _, r := range c.m.opts.Roots {
		abs, err := filepath.Abs(r)
		if err != nil {
			continue
		}
		roots = append(roots, &mcp.Root{URI: (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String(), Name: filepath.Base(abs)})
	}
	if len(roots) > 0 {
		client.AddRoots(roots...)
	}
	start := time.Now()
	if watched {
		tr = &watchedTransport{Transport: tr, c: c, epoch: epoch, life: ctx}
	}
	sess, err := client.Connect(cctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	if err != nil {
		if af := c.takeAuthFailure(); af != nil {
			return nil, af
		}
		if errors.Is(context.Cause(cctx), errConnectTimeout) {
			return nil, fmt.Errorf("connect: no answer to initialize within %v (MCP_TIMEOUT)", timeout)
		}
		if strings.Contains(err.Error(), "unsupported protocol version") {
			return nil, fmt.Errorf("connect: %w (keel asked for %s and speaks %s)", err, ProtocolVersion, strings.Join(mcp.SupportedProtocolVersions(), ", "))
		}
		return nil, fmt.Errorf("connect: %w", err)
	}
	lists, err := c.list(cctx, sess, listAll)
	if err != nil {
		c.closeSession(sess)
		if errors.Is(context.Cause(cctx), errConnectTimeout) {
			return nil, fmt.Errorf("list: no answer within %v (MCP_TIMEOUT)", timeout)
		}
		return nil, fmt.Errorf("list: %w", err)
	}
	init := sess.InitializeResult()
	c.m.mu.Lock()
	c.session = sess
	c.status, c.reason = StatusConnected, ""
	c.unhealthy = false
	c.apply(lists)
	c.listed = c.dirty
	if init != nil {
		c.instructions = init.Instructions
		if init.ServerInfo != nil {
			c.serverInfo = strings.TrimSpace(init.ServerInfo.Name + " " + init.ServerInfo.Version)
		}
	}
	wasLost := len(c.lastTools) > 0
	c.lastTools = nil
	if wasLost {
		c.m.note("MCP server %q reconnected; its tools are available again.", c.cfg.Name)
	}
	c.m.bump()
	c.m.mu.Unlock()
	c.logger.Info("mcp server connected", "tools", len(lists.tools), "dur", time.Since(start))
	return sess, nil
}

// serve handles relists until the session ends. It reports whether the session was lost
// (rather than closed because ctx ended or a reconnect was asked for).
func (c *conn) serve(ctx context.Context, sess *mcp.ClientSession) (lost bool) {
	ended := make(chan struct{})
	go func() {
		_ = sess.Wait()
		close(ended)
	}()
	for {
		select {
		case <-ctx.Done():
			c.closeSession(sess)
			<-ended
			return false
		case <-c.reconnect:
			c.closeSession(sess)
			<-ended
			c.m.mu.Lock()
			c.session = nil
			c.tools, c.prompts, c.resources = nil, nil, nil
			c.status = StatusPending
			c.m.bump()
			c.m.mu.Unlock()
			// Put the request back so run reconnects at once.
			c.reconnect <- struct{}{}
			return true
		case <-ended:
			c.lose(c.epochOf(), errors.New("connection closed"))
			c.m.mu.Lock()
			p := c.proc
			c.m.mu.Unlock()
			if p != nil {
				<-p.done
				c.m.mu.Lock()
				if c.status == StatusFailed && !c.unhealthy {
					c.reason = p.exitReason()
					c.m.wake()
				}
				c.m.mu.Unlock()
			}
			return true
		case <-c.relist:
			c.doRelist(ctx, sess)
		}
	}
}

func (c *conn) epochOf() int {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	return c.epoch
}

func (c *conn) closeSession(sess *mcp.ClientSession) {
	c.m.mu.Lock()
	c.closing = true
	c.m.mu.Unlock()
	_ = sess.Close()
}

// signingIn records that the connection attempt waits for the user to sign in at url, or
// no longer ("" when the browser came back): while it waits, [Manager.Start] does not wait
// for this server, and the attempt gets the login timeout instead of MCP_TIMEOUT. A sign-in
// outside a connection attempt (a step-up during a call) is bounded by the call.
func (c *conn) signingIn(url string) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	if c.deadline == nil {
		return
	}
	c.signIn = url
	if url != "" {
		c.deadline.Reset(c.m.opts.OAuth.loginTimeout())
	} else {
		c.deadline.Reset(c.m.opts.ConnectTimeout)
	}
	c.m.wake()
}

// maxReason caps a failure reason: some carry the server's whole answer (an HTML page).
const maxReason = 600

func shorten(reason string) string {
	reason = strings.TrimSpace(reason)
	if r := []rune(reason); len(r) > maxReason {
		return string(r[:maxReason]) + "…"
	}
	return reason
}

// authFailed records why the attempt's authorization failed.
func (c *conn) authFailed(err error) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	if c.deadline != nil {
		c.authFailure = err
	}
}

func (c *conn) takeAuthFailure() error {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	err := c.authFailure
	c.authFailure = nil
	return err
}

// fail records a connection that could not be made.
func (c *conn) fail(err error) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	c.session = nil
	c.tools, c.prompts, c.resources = nil, nil, nil
	var na *needsAuthError
	if errors.As(err, &na) {
		c.status, c.reason = StatusNeedsAuth, na.Error() // the transport's wrapping adds nothing for the user
	} else {
		c.status, c.reason = StatusFailed, shorten(err.Error())
		if p := c.proc; p != nil {
			select {
			case <-p.done:
				c.reason += " (" + p.exitReason() + ")"
			default:
			}
		}
	}
	c.logger.Warn("mcp server failed", "reason", c.reason)
	c.m.bump()
}

// lose marks a connected server as gone, synchronously from the read loop, so a call that
// fails because of it already sees the new generation without its tools.
func (c *conn) lose(epoch int, err error) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	if epoch != c.epoch || c.closing || c.status != StatusConnected {
		return
	}
	c.lastTools = c.tools
	c.session = nil
	c.tools, c.prompts, c.resources = nil, nil, nil
	c.status, c.reason = StatusFailed, "disconnected: "+err.Error()
	c.m.note("MCP server %q disconnected; its tools are gone until it reconnects.", c.cfg.Name)
	c.logger.Warn("mcp server disconnected", "err", err)
	c.m.bump()
}

// changed records a list_changed notification, synchronously from the read loop: the relist
// is then pending before any response that followed the notification reaches its caller.
func (c *conn) changed(epoch int, kind listKind) {
	c.m.mu.Lock()
	if epoch != c.epoch || c.status != StatusConnected {
		c.m.mu.Unlock()
		return
	}
	c.dirty++
	now := time.Now()
	if now.Sub(c.floodStart) > time.Second {
		c.floodStart, c.floodCount = now, 0
	}
	c.floodCount++
	if c.floodCount == 100 {
		c.logger.Warn("mcp server floods list_changed notifications; coalescing them")
	}
	c.m.mu.Unlock()
}

// kickRelist runs from the SDK's list_changed handler, after the SDK dropped its list cache,
// so the relist cannot be answered from a stale cache.
func (c *conn) kickRelist() {
	select {
	case c.relist <- struct{}{}:
	default: // a relist is already queued; it will cover this one
	}
}

func (c *conn) doRelist(ctx context.Context, sess *mcp.ClientSession) {
	c.m.mu.Lock()
	covers := c.dirty
	c.m.mu.Unlock()
	lctx, cancel := context.WithTimeout(ctx, c.m.opts.ConnectTimeout)
	defer cancel()
	lists, err := c.list(lctx, sess, listAll)
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	if c.session != sess {
		return
	}
	if err != nil {
		c.logger.Warn("mcp relist", "err", err)
		c.listed = covers
		c.m.wake()
		return
	}
	before := names(c.tools)
	c.apply(lists)
	c.listed = covers
	if added, removed := diff(before, names(c.tools)); len(added)+len(removed) > 0 {
		msg := fmt.Sprintf("MCP server %q changed its tools.", c.cfg.Name)
		if len(added) > 0 {
			msg += " Added: " + strings.Join(added, ", ") + "."
		}
		if len(removed) > 0 {
			msg += " Removed: " + strings.Join(removed, ", ") + "."
		}
		c.m.note("%s", msg)
	}
	c.m.bump()
}

func names(ts []*mcpTool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.name
	}
	return out
}

func diff(before, after []string) (added, removed []string) {
	for _, n := range after {
		if !slices.Contains(before, n) {
			added = append(added, n)
		}
	}
	for _, n := range before {
		if !slices.Contains(after, n) {
			removed = append(removed, n)
		}
	}
	return added, removed
}

// watchedTransport wraps a transport so the manager sees every incoming message in order,
// before the SDK dispatches it.
type watchedTransport struct {
	mcp.Transport
	c     *conn
	epoch int
	// life outlives the connect timeout: SSE ties its event stream to the Connect context.
	life context.Context
}

func (t *watchedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	lctx, cancel := context.WithCancel(t.life)
	stop := context.AfterFunc(ctx, cancel)
	conn, err := t.Transport.Connect(lctx)
	if !stop() && err == nil {
		// ctx ended while connecting; the connection is unusable.
		conn.Close()
		return nil, ctx.Err()
	}
	if err != nil {
		cancel()
		return nil, err
	}
	return &watchedConn{Connection: conn, c: t.c, epoch: t.epoch}, nil
}

type watchedConn struct {
	mcp.Connection
	c     *conn
	epoch int
}

func (w *watchedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := w.Connection.Read(ctx)
	if err != nil {
		w.c.lose(w.epoch, err)
		return nil, err
	}
	if req, ok := msg.(*jsonrpc.Request); ok && !req.IsCall() {
		switch req.Method {
		case "notifications/tools/list_changed":
			w.c.changed(w.epoch, listTools)
		case "notifications/prompts/list_changed":
			w.c.changed(w.epoch, listPrompts)
		case "notifications/resources/list_changed":
			w.c.changed(w.epoch, listResources)
		}
	}
	return msg, nil
}
