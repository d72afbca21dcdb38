package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/keel-dev/keel/internal/event"
)

// Program is the companion that holds the OpenTelemetry SDK and exporters.
const Program = "keel-otel"

// queueLen bounds the lines waiting for keel-otel. A full queue drops lines (counted and
// logged) rather than slowing the agent: telemetry never holds up work.
const queueLen = 8192

// Options say how to start keel-otel.
type Options struct {
	// Binary is the path of keel-otel (companion.Find(Program, …)).
	Binary  string
	Session SessionInfo
	// Traceparent is TRACEPARENT (with Tracestate) of a headless or SDK run: every
	// interaction becomes a child of the caller's span. Interactive runs leave it empty.
	Traceparent, Tracestate string
	// Stderr receives keel-otel's own log (its exporters' errors); nil discards.
	Stderr io.Writer
	Logger *slog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Exporter streams one session's prompts and events to keel-otel. Its methods are safe for
// concurrent use and do nothing on a nil *Exporter, so callers need not check whether
// telemetry is on.
type Exporter struct {
	cfg    Config
	opts   Options
	cmd    *exec.Cmd
	queue  chan Line
	done   chan struct{}
	logger *slog.Logger
	parent struct{ trace, span, flags, state string }

	// mu guards prompt, closed and dropped.
	mu      sync.Mutex
	prompt  *Prompt
	closed  bool
	dropped int
}

// Start runs keel-otel with cfg and announces the session. It returns nil and no error when
// cfg exports nothing.
func Start(ctx context.Context, cfg Config, opts Options) (*Exporter, error) {
	if !cfg.Active() {
		return nil, nil
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	x := &Exporter{cfg: cfg, opts: opts, queue: make(chan Line, queueLen), done: make(chan struct{}), logger: opts.Logger}
	if opts.Traceparent != "" {
		trace, span, flags, err := ParseTraceparent(opts.Traceparent)
		if err != nil {
			opts.Logger.Warn("ignoring TRACEPARENT", "err", err)
		} else {
			x.parent.trace, x.parent.span, x.parent.flags, x.parent.state = trace, span, flags, opts.Tracestate
		}
	}
	// keel-otel outlives a cancelled run long enough to flush: it stops when its stdin closes.
	x.cmd = exec.CommandContext(context.WithoutCancel(ctx), opts.Binary)
	x.cmd.Stderr = opts.Stderr
	in, err := x.cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", Program, err)
	}
	if err := x.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", Program, err)
	}
	x.queue <- Line{At: opts.Now(), Config: &cfg}
	x.queue <- Line{At: opts.Now(), Session: &opts.Session}
	go x.write(in)
	return x, nil
}

// write owns keel-otel's stdin until the queue is closed.
func (x *Exporter) write(in io.WriteCloser) {
	defer close(x.done)
	enc := json.NewEncoder(in)
	failed := false
	for l := range x.queue {
		if failed {
			continue
		}
		if err := enc.Encode(l); err != nil {
			x.logger.Warn("telemetry: keel-otel stopped reading; no more telemetry this session", "err", err)
			failed = true
		}
	}
	_ = in.Close()
}

func (x *Exporter) send(l Line) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return
	}
	select {
	case x.queue <- l:
	default:
		x.dropped++
		if x.dropped == 1 {
			x.logger.Warn("telemetry: keel-otel is behind; dropping telemetry")
		}
	}
}

// Prompt opens an interaction for a user prompt. Its text goes out only when
// OTEL_LOG_USER_PROMPTS allows.
func (x *Exporter) Prompt(text string) {
	if x == nil {
		return
	}
	p := &Prompt{ID: uuid.NewString(), Length: len([]rune(text)), SpanID: NewSpanID()}
	if x.cfg.LogUserPrompts {
		p.Text = text
	}
	if x.parent.trace != "" {
		p.TraceID, p.ParentSpanID, p.TraceFlags, p.TraceState = x.parent.trace, x.parent.span, x.parent.flags, x.parent.state
	} else {
		p.TraceID = NewTraceID()
	}
	x.mu.Lock()
	x.prompt = p
	x.mu.Unlock()
	x.send(Line{At: x.opts.Now(), Prompt: p})
}

// Observe passes one event of the session on. Deltas are left out: they carry nothing the
// complete messages do not.
func (x *Exporter) Observe(e event.Event) {
	if x == nil {
		return
	}
	switch e.(type) {
	case event.TextDelta, event.ThinkingDelta, event.ToolProgress:
		return
	}
	data, err := event.Encode(e)
	if err != nil {
		x.logger.Warn("telemetry: encode event", "err", err)
		return
	}
	x.send(Line{At: x.opts.Now(), Event: data})
}

// Traceparent returns the TRACEPARENT for a process run by tool call toolUseID (a Bash
// command, a hook on a tool event), so the process's own spans join the tool call's span;
// with no toolUseID (a hook on another event, an MCP server starting), the current prompt's
// span. Before the first prompt it is the caller's TRACEPARENT in a headless or SDK run, and
// empty otherwise; empty too when traces are off.
func (x *Exporter) Traceparent(toolUseID string) string {
	if x == nil || !x.cfg.Traces.On() {
		return ""
	}
	x.mu.Lock()
	p := x.prompt
	x.mu.Unlock()
	if p == nil {
		if x.parent.trace == "" {
			return ""
		}
		return "00-" + x.parent.trace + "-" + x.parent.span + "-" + x.parent.flags
	}
	if toolUseID == "" {
		return Traceparent(p.TraceID, p.SpanID)
	}
	return Traceparent(p.TraceID, SpanID(p.TraceID, KindTool, toolUseID))
}

// Close ends the stream and waits, until ctx is done, for keel-otel to flush and exit.
func (x *Exporter) Close(ctx context.Context) error {
	if x == nil {
		return nil
	}
	x.mu.Lock()
	if x.closed {
		x.mu.Unlock()
		return nil
	}
	x.closed = true
	close(x.queue)
	x.mu.Unlock()
	exited := make(chan error, 1)
	go func() {
		<-x.done
		exited <- x.cmd.Wait()
	}()
	select {
	case err := <-exited:
		if err != nil {
			return fmt.Errorf("%s: %w", Program, err)
		}
		return nil
	case <-ctx.Done():
		_ = x.cmd.Process.Kill()
		return errors.Join(fmt.Errorf("%s did not finish exporting: %w", Program, context.Cause(ctx)), <-exited)
	}
}
