package subagent

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/keel-dev/keel/internal/background"
	"github.com/keel-dev/keel/internal/clearing"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/transcript"
)

// childSink sends a child's events to the parent's stream (each carries the child's origin)
// and its messages to the child's own transcript. At the end of each turn it syncs the
// transcript and then acks the notifications that turn's request carried.
type childSink struct {
	r     *Runner
	w     *transcript.Writer
	queue *background.Queue
	// last is the newest entry appended: the assistant entry while its calls run.
	last string
	// progress, for a child that is a task (not a teammate), turns its replies into
	// task_progress events.
	progress *progress
	// synced, for a teammate, runs after each turn's sync with its error (acks its inbox).
	synced func(ctx context.Context, err error) error
}

var (
	_ loop.ToolRecorder  = (*childSink)(nil)
	_ loop.ClearRecorder = (*childSink)(nil)
)

func (k *childSink) Emit(e event.Event) {
	k.r.emit(e)
	// The child's request usage and cache breaks go into its transcript, for readers such as
	// the dashboard.
	if rec, ok := transcript.RecordOf(e); ok && k.w != nil {
		_, _ = k.w.Append(context.Background(), rec)
	}
	if k.progress != nil {
		if p, ok := k.progress.observe(e); ok {
			k.r.emit(p)
		}
	}
}

// progress adds up a child's work for its task_progress events.
type progress struct {
	id, toolUseID, description, subagentType string
	origin                                   event.Origin
	started                                  time.Time

	// mu guards total and uses.
	mu    sync.Mutex
	total int64
	uses  int
}

// observe counts a reply of the child; one that calls tools makes a progress event.
func (p *progress) observe(e event.Event) (event.TaskProgress, bool) {
	a, ok := e.(event.AssistantMessage)
	if !ok || a.Origin.AgentID != p.origin.AgentID {
		return event.TaskProgress{}, false
	}
	calls := a.Message.ToolUses()
	p.mu.Lock()
	p.total += a.Usage.TotalInput() + a.Usage.OutputTokens
	p.uses += len(calls)
	total, uses := p.total, p.uses
	p.mu.Unlock()
	if len(calls) == 0 {
		return event.TaskProgress{}, false
	}
	return event.TaskProgress{Origin: p.origin, TaskID: p.id, ToolUseID: p.toolUseID, Description: p.description, SubagentType: p.subagentType,
		Usage: event.TaskUsage{TotalTokens: total, ToolUses: uses, Duration: time.Since(p.started)}, LastToolName: calls[len(calls)-1].Name}, true
}

func (k *childSink) Append(ctx context.Context, m message.Message) (string, error) {
	if k.w == nil {
		return uuid.NewString(), nil
	}
	typ := transcript.TypeUser
	if m.Role == message.RoleAssistant {
		typ = transcript.TypeAssistant
	}
	e, err := k.w.Append(ctx, transcript.Entry{Type: typ, Message: &m})
	k.last = e.UUID
	return e.UUID, err
}

// ToolStarted records, durably, that a call with side effects is about to run.
func (k *childSink) ToolStarted(ctx context.Context, call tool.Call) error {
	if k.w == nil {
		return nil
	}
	if _, err := k.w.Append(ctx, transcript.Entry{Type: transcript.TypeToolStarted, ParentUUID: k.last,
		ToolUseID: call.ID, ToolName: call.Name}); err != nil {
		return err
	}
	return k.w.Sync(ctx)
}

// RecordCleared records a clearing of the child's tool results in its own transcript, so a
// continued child (or a resumed teammate) rebuilds the context its requests were built from.
func (k *childSink) RecordCleared(ctx context.Context, results []clearing.Cleared) error {
	if k.w == nil {
		return nil
	}
	rs := make([]transcript.ClearedResult, len(results))
	for i, r := range results {
		rs[i] = transcript.ClearedResult{ToolUseID: r.ToolUseID, Stub: r.Stub}
	}
	e, err := transcript.ClearedEntry(k.last, rs)
	if err == nil {
		_, err = k.w.Append(ctx, e)
	}
	return err
}

func (k *childSink) EndTurn(ctx context.Context) error {
	var err error
	if k.w != nil {
		err = k.w.Sync(ctx)
	}
	if err == nil {
		err = k.queue.Ack()
	}
	if k.synced != nil {
		return k.synced(ctx, err)
	}
	return err
}

// compacted records a compaction boundary in the child's transcript, durably, so a
// continuation starts from its summary.
func (k *childSink) compacted(ctx context.Context, summary string) (string, error) {
	if k.w == nil {
		return uuid.NewString(), nil
	}
	e, err := k.w.Append(ctx, transcript.Entry{Type: transcript.TypeSummary, Summary: summary})
	if err != nil {
		return "", err
	}
	k.last = e.UUID
	return e.UUID, k.w.Sync(ctx)
}

// inbox holds messages sent with SendMessage to a child that is running; it reads them at its
// next request boundary.
type inbox struct {
	// mu guards msgs.
	mu   sync.Mutex
	msgs []string
}

func (b *inbox) push(from, text string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if from == "" {
		from = "the main agent"
	}
	b.msgs = append(b.msgs, "<message from=\""+from+"\">\n"+text+"\n</message>")
}

func (b *inbox) Observe(context.Context) []message.Block {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []message.Block
	for _, m := range b.msgs {
		out = append(out, message.Text(m))
	}
	b.msgs = nil
	return out
}

// checkGate is the gate of a child when the session supplies none: permissions only.
type checkGate struct{ c *permission.Checker }

func (g checkGate) Before(ctx context.Context, env *tool.Env, t tool.Tool, call *tool.Call) (tool.Result, bool) {
	req := PermissionRequest(t, call.Input, env.State.Cwd)
	req.Resolve()
	d := g.c.Check(ctx, req)
	if d.Behavior != permission.Allow {
		return tool.Errorf("Permission to use %s was denied. %s", call.Name, d.Reason), false
	}
	env.Hidden, env.HiddenNote = g.c.SearchFilter()
	env.Paths = req.Resolved // the tool acts on what was checked, as toolgate's gate does
	return tool.Result{}, true
}

func (g checkGate) After(context.Context, *tool.Env, tool.Tool, tool.Call, *tool.Result) {}

// PermissionRequest describes a tool call for the permission engine.
func PermissionRequest(t tool.Tool, input json.RawMessage, cwd string) permission.Request {
	return permission.RequestFor(t.Name(), t.ReadOnly(input), input, cwd)
}
