package subagent

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/google/uuid"

	"github.com/keel-dev/keel/internal/background"
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
}

var _ loop.ToolRecorder = (*childSink)(nil)

func (k *childSink) Emit(e event.Event) { k.r.emit(e) }

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

func (k *childSink) EndTurn(ctx context.Context) error {
	if k.w != nil {
		if err := k.w.Sync(ctx); err != nil {
			return err
		}
	}
	return k.queue.Ack()
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
	d := g.c.Check(ctx, PermissionRequest(t, call.Input, env.State.Cwd))
	if d.Behavior != permission.Allow {
		return tool.Errorf("Permission to use %s was denied. %s", call.Name, d.Reason), false
	}
	env.Hidden = g.c.ReadFilter()
	return tool.Result{}, true
}

func (g checkGate) After(context.Context, *tool.Env, tool.Tool, tool.Call, *tool.Result) {}

// PermissionRequest describes a tool call for the permission engine.
func PermissionRequest(t tool.Tool, input json.RawMessage, cwd string) permission.Request {
	return permission.RequestFor(t.Name(), t.ReadOnly(input), input, cwd)
}
