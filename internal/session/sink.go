package session

import (
	"context"
	"errors"

	"github.com/keel-dev/keel/internal/clearing"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/transcript"
)

var (
	_ loop.ToolRecorder  = (*chanSink)(nil)
	_ loop.ClearRecorder = (*chanSink)(nil)
)

// close ends the event stream; later events (a background agent finishing between Sends)
// are dropped.
func (k *chanSink) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closed = true
	close(k.ch)
}

// compacted restarts the id list at the compaction boundary.
func (k *chanSink) compacted(boundary string) {
	k.uuids = []string{boundary}
	k.replaced = true
}

func (k *chanSink) Emit(e event.Event) { k.send(e, false) }

// send passes e to the run's Send and reports whether it could: false once the run ended.
func (k *chanSink) send(e event.Event, observed bool) bool {
	if a, ok := e.(event.AssistantMessage); ok {
		e = k.s.hookd.MessageDisplay(context.Background(), a)
	}
	// The main agent's request usage and cache breaks go into its transcript too, for readers
	// such as the dashboard; a subagent's go into its own (subagent.childSink).
	if rec, ok := transcript.RecordOf(e); ok && e.From().AgentID == "" && k.s.transcript != nil {
		if _, err := k.s.transcript.Append(context.Background(), rec); err != nil {
			k.s.logger.Warn("record usage", "err", err)
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return false
	}
	k.ch <- sinkEvent{e, observed}
	return true
}

func (k *chanSink) Append(ctx context.Context, m message.Message) (string, error) {
	t := transcript.TypeUser
	if m.Role == message.RoleAssistant {
		t = transcript.TypeAssistant
	}
	id, err := k.s.persist.record(ctx, transcript.Entry{Type: t, Message: &m})
	if err != nil {
		return "", err
	}
	k.uuids = append(k.uuids, id)
	return id, nil
}

// EndTurn makes the turn durable: one fdatasync per turn, not per entry.
func (k *chanSink) EndTurn(ctx context.Context) error {
	if k.s.transcript != nil {
		if err := k.s.transcript.Sync(ctx); err != nil {
			return err
		}
	}
	// The request carrying any background notifications was sent and is now on disk.
	return k.s.agents.ackNotifications()
}

// ToolStarted records, durably, that a call with side effects is about to run. Its parent is
// the assistant entry of the call: the last message appended, since a batch runs right after
// the reply that asked for it.
func (k *chanSink) ToolStarted(ctx context.Context, call tool.Call) error {
	if k.s.transcript == nil {
		return nil
	}
	parent := ""
	if n := len(k.uuids); n > 0 {
		parent = k.uuids[n-1]
	}
	if _, err := k.s.transcript.Append(ctx, transcript.Entry{Type: transcript.TypeToolStarted, ParentUUID: parent,
		ToolUseID: call.ID, ToolName: call.Name}); err != nil {
		return err
	}
	return k.s.transcript.Sync(ctx)
}

// RecordCleared records a clearing of the main agent's tool results, after the newest entry;
// the end of the turn makes it durable with the rest.
func (k *chanSink) RecordCleared(ctx context.Context, results []clearing.Cleared) error {
	if k.s.transcript == nil {
		return nil
	}
	parent := ""
	if n := len(k.uuids); n > 0 {
		parent = k.uuids[n-1]
	}
	e, err := transcript.ClearedEntry(parent, clearedResults(results))
	if err == nil {
		_, err = k.s.transcript.Append(ctx, e)
	}
	return err
}

func clearedResults(results []clearing.Cleared) []transcript.ClearedResult {
	out := make([]transcript.ClearedResult, len(results))
	for i, r := range results {
		out[i] = transcript.ClearedResult{ToolUseID: r.ToolUseID, Stub: r.Stub}
	}
	return out
}

// ackNotifications forgets the notifications the last request carried; the sink calls it
// after the transcript holding them was synced.
func (a *Agents) ackNotifications() error {
	if a == nil {
		return nil
	}
	err := a.queue.Ack()
	if t := a.team(); t != nil && t.LeadInbox() != nil {
		err = errors.Join(err, t.LeadInbox().Ack(context.Background()))
	}
	return err
}
