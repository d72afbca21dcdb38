package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"sync"

	"github.com/google/uuid"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/render"
)

// Session is what the protocol drives; the CLI hands it a *session.Session. Further
// abilities (MCP status, context usage, rewinding files…) are small interfaces of their own,
// found by type assertion, so a request the session cannot serve is answered with an error.
type Session interface {
	ID() string
	Send(ctx context.Context, prompt string) iter.Seq2[event.Event, error]
	Model() string
	SetModel(model string)
	PermissionMode() string
	SetPermissionMode(mode string) error
	Close() error
}

// Config configures [Run].
type Config struct {
	In  io.Reader
	Out io.Writer
	// Open opens the session once initialize has arrived, shaped by what it carried; with no
	// initialize (a program that sends prompts right away) it is called with an empty Init
	// at the first prompt or request that needs the session.
	Open func(ctx context.Context, init *Init) (Session, error)
	// Render is the stream-json renderer's options (partial messages, replayed prompts…).
	Render render.StreamOptions
	// PromptStdio sends permission questions to the SDK as can_use_tool requests
	// (--permission-prompt-tool stdio); without it nobody is asked and the call is denied.
	PromptStdio bool
	// Notices are shown before the first turn (flags keel accepts but ignores…).
	Notices []event.Notice
	// Version is keel's version, reported in initialize's response and the init line;
	// APIKeySource says where the credentials came from ([APIKeySource]).
	Version      string
	APIKeySource string
	// WaitBackground, after stdin ends, waits for background agents and gives the model a
	// turn for their reports (as `keel -p` does).
	WaitBackground bool
	// SessionState reports running, requires_action and idle in session_state_changed lines,
	// which the SDK reads (it asks with CLAUDE_CODE_SDK_READS_SESSION_STATE=1) to know when a
	// run that may still call back into it has ended.
	SessionState bool
	Logger       *slog.Logger
}

// ErrTurnFailed is returned by [Run] when the last turn ended in an error result, so the
// CLI exits non-zero as Claude Code does.
var ErrTurnFailed = errors.New("the last turn ended in an error")

// controller is one run of the protocol.
type controller struct {
	cfg    Config
	logger *slog.Logger
	w      *writer
	out    *outbox
	r      render.Renderer

	// inbox carries stdin lines (other than control responses) to the dispatcher, in order.
	inbox *queue[inLine]
	// prompts carries user messages from the dispatcher to the turn loop.
	prompts *queue[prompt]

	// opened is closed when the session is open (or failed to open).
	opened  chan struct{}
	sess    Session
	openErr error
	init    *Init
	// initialModel is the model the session opened with (set_model's "default").
	initialModel string

	// mu guards turnCancel, lastError, state, asking, sdkMCP and handlers.
	mu         sync.Mutex
	turnCancel context.CancelCauseFunc
	lastError  bool
	// state is the session state last reported; asking counts questions waiting for the SDK.
	state  string
	asking int
	// handlers cancels SDK requests in flight by request id (control_cancel_request).
	handlers map[string]context.CancelFunc
	sdkMCP   map[string]*sdkServer
}

type prompt struct {
	text string
	uuid string
}

// Run speaks the protocol on cfg.In and cfg.Out until stdin ends and the last queued
// prompt has run, or ctx ends (then the running turn is interrupted first).
func Run(ctx context.Context, cfg Config) error {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	w := &writer{w: cfg.Out}
	c := &controller{
		cfg: cfg, logger: logger, w: w, out: newOutbox(w),
		inbox: newQueue[inLine](), prompts: newQueue[prompt](),
		opened: make(chan struct{}), handlers: map[string]context.CancelFunc{}, sdkMCP: map[string]*sdkServer{},
	}
	c.r = render.NewStreamJSON(w, cfg.Render)
	c.out.onUnknown = func(id string) {
		c.notice("warn", fmt.Sprintf("control_response for request %q, which keel did not send or no longer waits for; ignored", id))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { c.read(ctx) })
	wg.Go(func() { c.dispatch(ctx) })
	err := c.turns(ctx)
	cancel()
	c.inbox.close()
	c.prompts.close()
	if c.sess != nil {
		if cerr := c.sess.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	// The reader may sit in a read of stdin that only the process's exit ends; it owns
	// nothing that needs cleaning up, so it is not waited for.
	go wg.Wait()
	return err
}

// read sorts stdin: control responses go straight to the outbox (a turn may be waiting for
// one while the dispatcher is busy), everything else to the dispatcher in order. At the end
// of stdin nothing more can be answered: requests waiting for the SDK fail, and a turn
// blocked on one is interrupted.
func (c *controller) read(ctx context.Context) {
	defer func() {
		// The outbox closes first: once the turns see the end of the prompts, everything
		// after them (SessionEnd) knows that no answer can come.
		if c.out.close() {
			c.interrupt(errSDKGone)
		}
		c.inbox.close()
	}()
	br := bufio.NewReaderSize(c.cfg.In, 64<<10)
	for n := 1; ; n++ {
		data, err := br.ReadBytes('\n')
		if len(trim(data)) > 0 {
			c.route(n, data)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && ctx.Err() == nil {
				c.notice("error", fmt.Sprintf("read stdin: %v", err))
			}
			return
		}
	}
}

func (c *controller) route(n int, data []byte) {
	var l inLine
	if err := json.Unmarshal(data, &l); err != nil {
		c.notice("error", fmt.Sprintf("stdin line %d is not a JSON object (%v); ignored", n, err))
		return
	}
	switch l.Type {
	case "control_response":
		if l.Response == nil {
			c.notice("error", fmt.Sprintf("stdin line %d: control_response without a response object; ignored", n))
			return
		}
		c.out.deliver(*l.Response)
	case "control_cancel_request":
		c.mu.Lock()
		cancel := c.handlers[l.RequestID]
		c.mu.Unlock()
		if cancel != nil {
			cancel()
		}
	case "keep_alive":
	case "user", "control_request":
		c.inbox.push(l)
	default:
		c.notice("warn", fmt.Sprintf("stdin line %d has type %q, which is not one of user, control_request, control_response, control_cancel_request, keep_alive; ignored", n, l.Type))
	}
}

// dispatch handles requests and prompts in arrival order.
func (c *controller) dispatch(ctx context.Context) {
	defer c.prompts.close()
	for {
		l, ok := c.inbox.pop(ctx)
		if !ok {
			c.ensureOpen(ctx, nil)
			return
		}
		switch l.Type {
		case "user":
			text, err := contentText(l.Message)
			if err != nil {
				c.notice("error", err.Error())
				continue
			}
			if c.ensureOpen(ctx, nil) != nil {
				continue
			}
			c.prompts.push(prompt{text: text, uuid: l.UUID})
		case "control_request":
			c.handleRequest(ctx, l)
		}
	}
}

// ensureOpen opens the session unless it is open; init is nil without an initialize.
func (c *controller) ensureOpen(ctx context.Context, init *Init) error {
	select {
	case <-c.opened:
		return c.openErr
	default:
	}
	if init == nil {
		init = &Init{}
	}
	c.init = init
	c.wire(init)
	c.sess, c.openErr = c.cfg.Open(ctx, init)
	if c.openErr != nil {
		c.openErr = fmt.Errorf("open session: %w", c.openErr)
	} else {
		c.initialModel = c.sess.Model()
	}
	close(c.opened)
	return c.openErr
}

// turns runs one turn per prompt until the prompts end.
func (c *controller) turns(ctx context.Context) error {
	select {
	case <-c.opened:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	if c.openErr != nil {
		c.r.Render(event.Result{Subtype: "error_during_execution", IsError: true, Text: c.openErr.Error()})
		return c.openErr
	}
	for _, n := range c.cfg.Notices {
		_ = c.r.Render(n)
	}
	for {
		p, ok := c.next(ctx)
		if !ok {
			break
		}
		c.setState("running")
		c.turn(ctx, c.sess.Send, p.text)
	}
	if ctx.Err() == nil && c.cfg.WaitBackground {
		c.drainBackground(ctx)
	}
	c.out.unused()
	if err := c.r.Finish(); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	c.mu.Lock()
	failed := c.lastError
	c.mu.Unlock()
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if failed {
		return ErrTurnFailed
	}
	return nil
}

// backgrounder is a session whose background agents can outlive a turn.
type backgrounder interface {
	WaitBackground(ctx context.Context) (int, error)
	SendPending(ctx context.Context) func(yield func(event.Event, error) bool)
}

// taskWaiter is a session whose background agents can be waited for between prompts.
type taskWaiter interface {
	backgrounder
	WaitTasks(ctx context.Context) (int, error)
	BackgroundOutstanding() int
}

// next waits for the next prompt; false once stdin has ended and every prompt ran, or ctx
// ended. Meanwhile a background agent of the main thread that reports gets a turn of its
// own, as at the end of `keel -p`, and the session reads idle only when nothing is left to
// do: the SDK keeps stdin open until then, so those agents' questions and hook callbacks
// can still be answered.
func (c *controller) next(ctx context.Context) (prompt, bool) {
	w, _ := c.sess.(taskWaiter)
	for {
		if c.prompts.available() || ctx.Err() != nil {
			return c.prompts.pop(ctx)
		}
		if w == nil || w.BackgroundOutstanding() == 0 {
			if len(c.inbox.snapshot()) == 0 {
				c.setState("idle")
			}
			return c.prompts.pop(ctx)
		}
		if n := c.waitReport(ctx, w); n > 0 {
			c.setState("running")
			c.turn(ctx, func(ctx context.Context, _ string) iter.Seq2[event.Event, error] { return w.SendPending(ctx) }, "")
		}
	}
}

// waitReport waits until a background agent reports (how many reports wait), the agents
// are done, or a prompt or the end of stdin arrives (0).
func (c *controller) waitReport(ctx context.Context, w taskWaiter) int {
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	reports := make(chan int, 1)
	wg.Go(func() {
		n, err := w.WaitTasks(wctx)
		if err == nil {
			reports <- n
		}
		cancel()
	})
	wg.Go(func() {
		c.prompts.wait(wctx)
		cancel()
	})
	wg.Wait()
	select {
	case n := <-reports:
		return n
	default:
		return 0
	}
}

// drainBackground waits for background agents still running and gives the model a turn for
// their reports, until none is left.
func (c *controller) drainBackground(ctx context.Context) {
	b, ok := c.sess.(backgrounder)
	if !ok {
		return
	}
	for {
		n, err := b.WaitBackground(ctx)
		if err != nil || n == 0 {
			return
		}
		c.turn(ctx, func(ctx context.Context, _ string) iter.Seq2[event.Event, error] { return b.SendPending(ctx) }, "")
	}
}

// turn runs one prompt, rendering its events; an interrupt cancels its context.
func (c *controller) turn(ctx context.Context, send func(context.Context, string) iter.Seq2[event.Event, error], text string) {
	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	c.mu.Lock()
	c.turnCancel = cancel
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.turnCancel = nil
		c.mu.Unlock()
	}()
	for e, err := range send(tctx, text) {
		if err != nil {
			// The result line already told the SDK; the error is for the log.
			c.logger.Info("turn ended with an error", "err", err)
			continue
		}
		if res, ok := e.(event.Result); ok && res.Origin.AgentID == "" {
			c.mu.Lock()
			c.lastError = res.IsError
			c.mu.Unlock()
		}
		if err := c.r.Render(e); err != nil {
			c.logger.Warn("write output", "err", err)
			c.interrupt(fmt.Errorf("write output: %w", err))
		}
	}
}

// setState reports the session state when it changed.
func (c *controller) setState(state string) {
	if !c.cfg.SessionState {
		return
	}
	c.mu.Lock()
	if c.state == state {
		c.mu.Unlock()
		return
	}
	c.state = state
	c.mu.Unlock()
	line := map[string]any{"type": "system", "subtype": "session_state_changed", "state": state, "sdk_host_only": true,
		"uuid": uuid.NewString(), "session_id": c.sess.ID()}
	if err := c.w.line(line); err != nil {
		c.logger.Warn("write output", "err", err)
	}
}

// asked brackets a question to the SDK: the session requires action until every question
// is answered.
func (c *controller) asked(delta int) {
	c.mu.Lock()
	c.asking += delta
	n := c.asking
	c.mu.Unlock()
	if n > 0 {
		c.setState("requires_action")
	} else {
		c.setState("running")
	}
}

// request sends one of keel's own requests to the SDK. Once stdin has ended nobody can
// answer, and the turn that asked is interrupted: its history stays valid, and it does not
// go on without the answers it needed.
func (c *controller) request(ctx context.Context, req any) (json.RawMessage, error) {
	resp, err := c.out.request(ctx, req)
	if errors.Is(err, errSDKGone) {
		c.interrupt(errSDKGone)
	}
	return resp, err
}

// interrupt ends the running turn, if any, with cause.
func (c *controller) interrupt(cause error) bool {
	c.mu.Lock()
	cancel := c.turnCancel
	c.mu.Unlock()
	if cancel == nil {
		return false
	}
	cancel(cause)
	return true
}

// notice shows the user something outside the conversation, as a system line.
func (c *controller) notice(level, text string) {
	c.logger.Warn("control", "notice", text)
	if err := c.r.Render(event.Notice{Level: level, Text: text}); err != nil {
		c.logger.Warn("write output", "err", err)
	}
}

// contentText reads a user message's content: a string, or blocks whose text parts join.
func contentText(raw json.RawMessage) (string, error) {
	var msg struct {
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &msg); err != nil || len(msg.Content) == 0 {
		return "", fmt.Errorf("user line without a message.content; ignored")
	}
	var s string
	if json.Unmarshal(msg.Content, &s) == nil {
		return s, nil
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(msg.Content, &blocks); err != nil {
		return "", fmt.Errorf("user message content is neither a string nor a list of blocks; ignored")
	}
	var text string
	for _, b := range blocks {
		if b.Type == "text" {
			if text != "" {
				text += "\n"
			}
			text += b.Text
		}
	}
	return text, nil
}

func trim(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\n' || b[0] == '\r' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}
