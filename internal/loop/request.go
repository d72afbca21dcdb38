package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/tool"
)

// DefaultMaxTokens is the output budget of a request when the agent sets none.
const DefaultMaxTokens = 32000

// assemble builds the next request from the agent's fixed parts and the history. It is a pure
// function of its inputs: the same history gives the same request, byte for byte. stable, if
// set, is the end of a prefix the cache holds though later messages changed (old tool results
// cleared); the request marks it.
func (a *Agent) assemble(ctx context.Context, history []message.Message, pool *tool.Pool, stable *provider.BlockRef) (*provider.Request, System) {
	maxTokens := a.MaxTokens
	if maxTokens == 0 {
		maxTokens = DefaultMaxTokens
	}
	var sys System
	if a.System != nil {
		sys = a.System(ctx)
	}
	req := &provider.Request{
		Model:        a.Model,
		MaxTokens:    maxTokens,
		System:       sys.Blocks,
		Tools:        Specs(pool),
		Messages:     Merge(history),
		Thinking:     a.Thinking,
		Source:       a.Source,
		SharedPrefix: stable,
	}
	if c := a.ClearByProvider; c != nil {
		req.ClearToolResults = c
		if req.SharedPrefix == nil {
			req.SharedPrefix = providerMark(req.Messages, c.Keep)
		}
	}
	if a.Prepare != nil {
		a.Prepare(req)
	}
	return req, sys
}

func (a *Agent) pool(ctx context.Context) *tool.Pool {
	if a.Pool == nil {
		return tool.Assemble(nil, nil)
	}
	return a.Pool(ctx)
}

// Specs turns a pool into the tool list of a request, in pool order.
func Specs(p *tool.Pool) []provider.ToolSpec {
	specs := make([]provider.ToolSpec, 0, p.Len())
	for _, t := range p.Tools() {
		specs = append(specs, provider.ToolSpec{Name: t.Name(), Description: t.Description(), InputSchema: t.InputSchema()})
	}
	return specs
}

// Merge joins consecutive messages of one role, as the API reads them. History keeps them
// apart (each is its own transcript entry); the merge is deterministic, so a prefix merged
// once merges the same way on every later request.
func Merge(history []message.Message) []message.Message {
	out := make([]message.Message, 0, len(history))
	for _, m := range history {
		if n := len(out); n > 0 && out[n-1].Role == m.Role {
			merged := out[n-1]
			merged.Content = append(append([]message.Block(nil), merged.Content...), m.Content...)
			out[n-1] = merged
			continue
		}
		out = append(out, m)
	}
	return out
}

// stream sends req and assembles the reply, emitting deltas as they arrive; the reply's own
// event waits in out until the reply is appended (and has its transcript id). A retried
// attempt discards what the failed one streamed; an interrupted stream leaves nothing behind.
func (a *Agent) stream(ctx context.Context, req *provider.Request, sys System, out *Outcome) (event.AssistantMessage, map[string]string, error) {
	if a.Watch != nil {
		a.emitBreaks(a.Watch.BeforeSend(req, sys.Names))
	}
	started := time.Now()
	defer func() { out.APIDuration += time.Since(started) }()
	// calls are the tool_use blocks streaming, by block index, for their input fragments.
	var calls map[int]provider.ToolUseStart
	for ev, err := range a.Provider.Stream(ctx, req) {
		if err != nil {
			if ctx.Err() != nil {
				return event.AssistantMessage{}, nil, context.Cause(ctx)
			}
			return event.AssistantMessage{}, nil, fmt.Errorf("model request: %w", err)
		}
		switch ev := ev.(type) {
		case provider.TextDelta:
			a.emit(event.TextDelta{Origin: a.Origin, Text: ev.Text})
		case provider.ThinkingDelta:
			a.emit(event.ThinkingDelta{Origin: a.Origin, Thinking: ev.Thinking})
		case provider.ToolUseStart:
			if calls == nil {
				calls = map[int]provider.ToolUseStart{}
			}
			calls[ev.Index] = ev
			a.emit(event.ToolInputDelta{Origin: a.Origin, ID: ev.ID, Name: ev.Name, Start: true})
		case provider.InputDelta:
			if c, ok := calls[ev.Index]; ok && ev.PartialJSON != "" {
				a.emit(event.ToolInputDelta{Origin: a.Origin, ID: c.ID, Name: c.Name, PartialJSON: ev.PartialJSON})
			}
		case provider.Retrying:
			calls = nil
			a.Logger.Warn("model request retrying", "attempt", ev.Attempt, "delay", ev.Delay, "err", ev.Err)
			a.emit(event.Retry{Origin: a.Origin, Attempt: ev.Attempt, MaxAttempts: ev.MaxAttempts, Delay: ev.Delay, Err: ev.Err.Error()})
		case provider.Done:
			reply, invalid := sanitizeToolInputs(dropBlankReplyText(ev.Message))
			out.Usage = out.Usage.Add(ev.Usage)
			model := ev.Model
			if model == "" {
				model = req.Model
			}
			out.Ledger.Add(model, ev.Usage)
			if a.Meter != nil {
				a.Meter.Add(model, ev.Usage)
			}
			out.lastUsage = ev.Usage
			out.StopReason = ev.StopReason
			if a.Watch != nil {
				if d, ok := a.Watch.(ProviderClearDeclarer); ok && req.ClearToolResults != nil {
					d.ProviderCleared(ev.ClearedToolUses)
				}
				a.emitBreaks(a.Watch.AfterResponse(ev.Usage))
			}
			done := event.AssistantMessage{Origin: a.Origin, Message: reply, StopReason: ev.StopReason,
				Usage: ev.Usage, Model: ev.Model, RequestID: ev.RequestID}
			out.pending = &done
			return done, invalid, nil
		}
	}
	if ctx.Err() != nil {
		return event.AssistantMessage{}, nil, context.Cause(ctx)
	}
	return event.AssistantMessage{}, nil, fmt.Errorf("model request: stream ended without a message")
}

func (a *Agent) emit(e event.Event) {
	if a.Sink != nil {
		a.Sink.Emit(e)
	}
}

func (a *Agent) emitBreaks(bs []event.CacheBreak) {
	for _, b := range bs {
		b.Origin = a.Origin
		a.emit(b)
	}
}

// sanitizeToolInputs replaces tool inputs that are not a JSON object with {} so the history
// stays sendable, and returns the raw text of each, by tool_use id, so those calls are answered
// with a precise error instead of running.
func sanitizeToolInputs(m message.Message) (message.Message, map[string]string) {
	invalid := map[string]string{}
	for i, b := range m.Content {
		if b.Type != message.TypeToolUse {
			continue
		}
		trimmed := strings.TrimSpace(string(b.Input))
		if !json.Valid(b.Input) || !strings.HasPrefix(trimmed, "{") {
			invalid[b.ID] = string(b.Input)
			m.Content[i].Input = json.RawMessage(`{}`)
		}
	}
	return m, invalid
}

// noContentText stands for a reply that had no content at all: an empty assistant message
// cannot be sent back.
const noContentText = "(no content)"

// dropBlankReplyText removes the empty and blank text blocks a reply can carry (the API may
// stream a text block with nothing in it before a tool call) and refuses to take back; a reply
// left with nothing says so.
func dropBlankReplyText(m message.Message) message.Message {
	kept := m.Content[:0:0]
	for _, b := range m.Content {
		if b.Type == message.TypeText && strings.TrimSpace(b.Text) == "" {
			continue
		}
		kept = append(kept, b)
	}
	if len(kept) == 0 {
		kept = []message.Block{message.Text(noContentText)}
	}
	m.Content = kept
	return m
}

func toolCalls(m message.Message) []tool.Call {
	var calls []tool.Call
	for _, b := range m.ToolUses() {
		calls = append(calls, tool.Call{ID: b.ID, Name: b.Name, Input: b.Input})
	}
	return calls
}
