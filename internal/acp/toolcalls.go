package acp

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/keel-dev/keel"
)

// maxResultText caps the text of a tool result shown in a tool call; the model gets it whole.
const maxResultText = 16 << 10

// toolCalls tracks the tool calls of a session as the client sees them: announced once
// (pending), in progress, then completed or failed. Events and permission questions arrive
// from different goroutines; whichever names a call first announces it.
type toolCalls struct {
	s *session
	// mu guards calls.
	mu    sync.Mutex
	calls map[string]*toolCall
}

// toolCall is one announced call.
type toolCall struct {
	name string
	// ready is closed once the client was told of the call.
	ready chan struct{}
	done  bool
	// terminal is set when the command runs in a client terminal, which shows its output.
	terminal bool
}

func newToolCalls(s *session) *toolCalls { return &toolCalls{s: s, calls: map[string]*toolCall{}} }

// announce sends the tool_call update for a call not announced yet and returns once the
// client has been told of the call, by this goroutine or the one that came first.
func (t *toolCalls) announce(ctx context.Context, id, name, agent string, input json.RawMessage) {
	t.mu.Lock()
	if c := t.calls[id]; c != nil {
		t.mu.Unlock()
		<-c.ready
		return
	}
	c := &toolCall{name: name, ready: make(chan struct{})}
	t.calls[id] = c
	t.mu.Unlock()
	defer close(c.ready)
	d := t.s.describe(ctx, name, agent, input)
	t.s.update(ctx, sdk.SessionUpdate{ToolCall: &sdk.SessionUpdateToolCall{
		ToolCallId: sdk.ToolCallId(id), Title: d.title, Kind: d.kind, Status: sdk.ToolCallStatusPending,
		Locations: d.locations, Content: d.content, RawInput: rawInput(input),
	}})
}

// rawInput is a call's input for the client; nil when there is none.
func rawInput(input json.RawMessage) any {
	if len(input) == 0 {
		return nil
	}
	return input
}

// announceMessage announces the tool calls of an assistant message as soon as it is complete,
// before permission questions and before they run.
func (t *toolCalls) announceMessage(ctx context.Context, ev keel.AssistantMessage) {
	for _, b := range ev.Message.Content {
		if b.Type == keel.BlockToolUse {
			t.announce(ctx, b.ID, b.Name, ev.Origin.AgentName, b.Input)
		}
	}
}

func (t *toolCalls) started(ctx context.Context, ev keel.ToolStart) {
	t.announce(ctx, ev.ID, ev.Name, ev.Origin.AgentName, ev.Input)
	t.status(ctx, ev.ID, sdk.ToolCallStatusInProgress, nil)
}

func (t *toolCalls) ended(ctx context.Context, ev keel.ToolEnd) {
	st := sdk.ToolCallStatusCompleted
	if ev.IsError {
		st = sdk.ToolCallStatusFailed
	}
	t.mu.Lock()
	c := t.calls[ev.ID]
	showOutput := c == nil || (!c.terminal && (kindOf(c.name) != sdk.ToolKindEdit || ev.IsError))
	t.mu.Unlock()
	var content []sdk.ToolCallContent
	if showOutput {
		if text := resultText(ev.Result); text != "" {
			content = []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(text))}
		}
	}
	t.status(ctx, ev.ID, st, content)
}

func (t *toolCalls) denied(ctx context.Context, ev keel.PermissionDenied) {
	t.announce(ctx, ev.ToolUseID, ev.ToolName, ev.Origin.AgentName, ev.Input)
	t.status(ctx, ev.ToolUseID, sdk.ToolCallStatusFailed, []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock("Denied: " + ev.Reason))})
}

// terminal shows a client terminal as the output of a running call.
func (t *toolCalls) terminal(ctx context.Context, id, terminalID string) {
	t.mu.Lock()
	if c := t.calls[id]; c != nil {
		c.terminal = true
	}
	t.mu.Unlock()
	t.s.update(ctx, sdk.SessionUpdate{ToolCallUpdate: &sdk.SessionToolCallUpdate{
		ToolCallId: sdk.ToolCallId(id), Content: []sdk.ToolCallContent{sdk.ToolTerminalRef(terminalID)},
	}})
}

// status moves a call on; a call already completed or failed stays as it is.
func (t *toolCalls) status(ctx context.Context, id string, st sdk.ToolCallStatus, content []sdk.ToolCallContent) {
	t.mu.Lock()
	c := t.calls[id]
	if c == nil || c.done {
		t.mu.Unlock()
		return
	}
	c.done = st == sdk.ToolCallStatusCompleted || st == sdk.ToolCallStatusFailed
	t.mu.Unlock()
	t.s.update(ctx, sdk.SessionUpdate{ToolCallUpdate: &sdk.SessionToolCallUpdate{
		ToolCallId: sdk.ToolCallId(id), Status: sdk.Ptr(st), Content: content,
	}})
}

// finish fails the calls a turn left open (it was cancelled, or failed) and forgets the turn's
// calls.
func (t *toolCalls) finish(ctx context.Context) {
	t.mu.Lock()
	var open []string
	for id, c := range t.calls {
		if !c.done {
			open = append(open, id)
		}
	}
	t.mu.Unlock()
	for _, id := range open {
		t.status(ctx, id, sdk.ToolCallStatusFailed, nil)
	}
	t.mu.Lock()
	t.calls = map[string]*toolCall{}
	t.mu.Unlock()
}

// resultText is a tool result's text for the client, cut to maxResultText.
func resultText(blocks []keel.Block) string {
	var b strings.Builder
	for _, blk := range blocks {
		if blk.Type == keel.BlockText {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(blk.Text)
		}
	}
	s := b.String()
	if len(s) > maxResultText {
		s = strings.ToValidUTF8(s[:maxResultText], "") + "\n…"
	}
	return s
}
