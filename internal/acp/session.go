package acp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/keel-dev/keel"
)

// errCancelled is the cause of a turn the client cancelled.
var errCancelled = errors.New("cancelled by the client")

// session is one keel session a client opened.
type session struct {
	a    *agent
	caps sdk.ClientCapabilities
	cwd  string
	id   string
	ks   *keel.Session
	// calls announces tool calls; it is the only state updates share across goroutines.
	calls *toolCalls

	// turn is held for the length of a prompt: one turn at a time.
	turn sync.Mutex
	// mu guards cancel, effort and closed.
	mu     sync.Mutex
	cancel context.CancelCauseFunc
	effort string
	closed bool
}

func (s *session) init(ks *keel.Session) {
	s.ks, s.id = ks, ks.ID()
	s.effort = effortOff
	s.calls = newToolCalls(s)
	ks.OnIdleEvents(func(ev keel.Event) { s.emit(context.Background(), ev) })
}

// update sends one session/update; a failed send (the client is gone) is only logged.
func (s *session) update(ctx context.Context, u sdk.SessionUpdate) {
	// Updates of a cancelled turn still go out: they close its tool calls.
	err := s.a.conn.SessionUpdate(context.WithoutCancel(ctx), sdk.SessionNotification{SessionId: sdk.SessionId(s.id), Update: u})
	if err != nil {
		s.a.cfg.Logger.Debug("acp: session update not sent", "session", s.id, "err", err)
	}
}

// prompt runs one turn: the client's content as one user message, every event as updates,
// and the stop reason at the end.
func (s *session) prompt(ctx context.Context, blocks []sdk.ContentBlock) (sdk.PromptResponse, error) {
	text, attachments, err := promptContent(blocks)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	s.turn.Lock()
	defer s.turn.Unlock()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return sdk.PromptResponse{}, notFound(s.id)
	}
	s.cancel = cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.cancel = nil
		s.mu.Unlock()
	}()

	run := keel.WithToolHost(ctx, &host{s: s})
	var result *keel.Result
	var runErr error
	for ev, err := range s.ks.SendContent(run, text, attachments) {
		if err != nil {
			runErr = err
			break
		}
		if r, ok := ev.(keel.Result); ok && r.Origin == (keel.Origin{}) {
			result = &r
		}
		s.emit(ctx, ev)
	}
	s.calls.finish(ctx)
	if ctx.Err() != nil {
		return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
	}
	if runErr != nil {
		return sdk.PromptResponse{}, fmt.Errorf("run the prompt: %w", runErr)
	}
	return stopReason(result)
}

// stopReason maps how a keel turn ended onto the protocol's stop reasons; a turn that failed
// (the model's API refused, a hook blocked the prompt) is an error with keel's message.
func stopReason(r *keel.Result) (sdk.PromptResponse, error) {
	if r == nil {
		return sdk.PromptResponse{}, errors.New("the turn ended without a result")
	}
	switch {
	case r.Subtype == "error_max_turns":
		return sdk.PromptResponse{StopReason: sdk.StopReasonMaxTurnRequests}, nil
	case r.StopReason == "max_tokens":
		return sdk.PromptResponse{StopReason: sdk.StopReasonMaxTokens}, nil
	case r.StopReason == "refusal":
		return sdk.PromptResponse{StopReason: sdk.StopReasonRefusal}, nil
	case r.IsError:
		return sdk.PromptResponse{}, &sdk.RequestError{Code: -32603, Message: "Internal error", Data: map[string]any{"error": r.Text}}
	}
	return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}, nil
}

// cancelTurn interrupts the turn that runs, if one does: its model request stops, its
// commands are killed and its pending questions are answered as cancelled.
func (s *session) cancelTurn() {
	s.mu.Lock()
	cancel := s.cancel
	s.mu.Unlock()
	if cancel != nil {
		cancel(errCancelled)
	}
}

// close interrupts a running turn, waits for it, and closes the keel session.
func (s *session) close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cancelTurn()
	s.turn.Lock()
	defer s.turn.Unlock()
	return s.ks.Close()
}

// emit turns one event into the updates it means to the client.
func (s *session) emit(ctx context.Context, ev keel.Event) {
	main := ev.From().AgentID == ""
	switch ev := ev.(type) {
	case keel.TextDelta:
		if main && ev.Text != "" {
			s.update(ctx, sdk.UpdateAgentMessageText(ev.Text))
		}
	case keel.ThinkingDelta:
		if main && ev.Thinking != "" {
			s.update(ctx, sdk.UpdateAgentThoughtText(ev.Thinking))
		}
	case keel.AssistantMessage:
		s.calls.announceMessage(ctx, ev)
	case keel.ToolStart:
		s.calls.started(ctx, ev)
	case keel.ToolEnd:
		s.calls.ended(ctx, ev)
	case keel.PermissionDenied:
		s.calls.denied(ctx, ev)
	case keel.Todos:
		if main {
			s.update(ctx, planUpdate(ev.Items))
		}
	case keel.Status:
		if ev.PermissionMode != "" {
			s.update(ctx, sdk.SessionUpdate{CurrentModeUpdate: &sdk.SessionCurrentModeUpdate{CurrentModeId: sdk.SessionModeId(ev.PermissionMode)}})
		}
	case keel.Notice:
		if ev.Level != "info" {
			s.update(ctx, sdk.UpdateAgentThoughtText("keel: "+ev.Text+"\n"))
		}
	case keel.TaskNotification:
		s.update(ctx, sdk.UpdateAgentThoughtText(fmt.Sprintf("Background task %s %s: %s\n", ev.TaskID, ev.Status, ev.Summary)))
	case keel.TeamMessage:
		s.update(ctx, sdk.UpdateAgentThoughtText(fmt.Sprintf("%s → %s: %s\n", ev.Sender, ev.Recipient, firstNonEmpty(ev.Summary, ev.Text))))
	case keel.TeammateState:
		s.update(ctx, sdk.UpdateAgentThoughtText(fmt.Sprintf("%s is %s\n", ev.Name, ev.State)))
	}
}

func planUpdate(items []keel.Todo) sdk.SessionUpdate {
	entries := make([]sdk.PlanEntry, 0, len(items))
	for _, it := range items {
		st := sdk.PlanEntryStatusPending
		switch it.Status {
		case "in_progress":
			st = sdk.PlanEntryStatusInProgress
		case "completed":
			st = sdk.PlanEntryStatusCompleted
		}
		entries = append(entries, sdk.PlanEntry{Content: it.Content, Status: st, Priority: sdk.PlanEntryPriorityMedium})
	}
	return sdk.UpdatePlan(entries...)
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if strings.TrimSpace(x) != "" {
			return x
		}
	}
	return ""
}
