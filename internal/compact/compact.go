// Package compact summarises an agent's history when it grows too close to the context
// window, for every agent alike: the main thread, subagents, fork children and teammates.
//
// A compaction request repeats the agent's newest request byte for byte — its rendered
// system prompt, its exact tool list, model and thinking — plus the summary prompt, so it
// reads everything that request sent from the prompt cache, and it writes nothing there: its
// own prefix is never reused, since the summary replaces the history. The agent's cache
// watcher is told first, so the fresh prefix that follows is not reported as a break. The
// boundary is recorded (durably) in the agent's transcript, so a resume starts from it.
package compact

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/cost"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/transcript"
)

// Prompt asks for the summary that replaces the history. The summary is written once and
// then read on every later request, so it names what can be looked up again — file paths,
// symbols, commands — instead of copying it: the model reads a file again when it needs it.
const Prompt = `Summarise this conversation so that you can continue the work from the summary alone. Include:
- the user's requests and intent, in their words where it matters;
- what has been done: the paths of the files read and of the files changed (with what changed, a line each), commands run and their outcomes;
- decisions made and why, errors met and how they were solved;
- the current state and the exact next step.
Do not copy file contents, code or tool output that can be read again: name the file (with the function or lines that matter) and read it again when you need it. Quote only what cannot be recovered, such as the user's exact words or an error message.
Be complete about facts and brief in wording. Reply with the summary only.`

// MaxTokens is the output budget of the summary.
const MaxTokens = 8192

// DefaultPercent is the share of the context window at which the history is compacted
// unless settings say otherwise (autoCompactThreshold).
const DefaultPercent = 85

// preamble opens the user message that stands for the history before a compaction.
const preamble = "This session continues from an earlier conversation that was summarised to save context. The summary:\n\n"

// SummaryMessage is the message a compaction boundary stands for, the same live and on
// resume.
func SummaryMessage(summary string) message.Message {
	return message.User(message.Text(preamble + summary))
}

// History is the history a replayed transcript continues from: its messages after the
// compaction boundary it starts from, behind that boundary's summary message, with the tool
// results cleared from the agent's context as stubs ([transcript.State.Context]).
func History(st *transcript.State) []message.Message {
	msgs, _ := st.Context()
	if b, ok := st.Boundary(); ok {
		msgs = append([]message.Message{SummaryMessage(b.Summary)}, msgs...)
	}
	return msgs
}

// Config is what a [Compactor] needs from its agent and its session.
type Config struct {
	// Provider answers the compaction request; Meter, if set, counts what it cost.
	Provider provider.Provider
	Meter    loop.Meter
	// Threshold is the input size, in tokens, past which the history is compacted; a
	// function because the agent's model (and so its window) may change.
	Threshold func() int64
	// Last returns what the agent's newest turn sent, or nil before the first: the request
	// the compaction repeats.
	Last func() *loop.CacheSafe
	// Model, System and Tools build the request when there is no turn to repeat (a /compact
	// right after resuming), as the agent's next request would be; Prepare finishes such a
	// request (deferred tools, breakpoints) and Breakpoints places the breakpoints of a
	// repeated one.
	Model       func() string
	System      func(ctx context.Context) loop.System
	Tools       func(ctx context.Context) []provider.ToolSpec
	Prepare     func(*provider.Request)
	Breakpoints func(*provider.Request)
	// CacheSource is the agent's query source, whose cache entries the request reads.
	CacheSource string
	// Before, if set, runs first (PreCompact hooks): what it returns joins the prompt.
	Before func(ctx context.Context, trigger string) []string
	// Announce tells the agent's cache watcher that a fresh prefix comes.
	Announce func(reason string)
	// Record writes the boundary in the agent's transcript, durably, and returns its entry
	// id; nil keeps no record.
	Record func(ctx context.Context, summary string) (string, error)
	// After, if set, runs once the history is replaced (PostCompact and SessionStart hooks, a
	// memoised prompt cleared), with the boundary's entry id.
	After func(ctx context.Context, trigger, summary, boundary string)
	// Emit receives the Compacted event, with Origin.
	Emit   func(event.Event)
	Origin event.Origin
}

// Compactor is an agent's [loop.Compactor]. It is safe for concurrent use.
type Compactor struct{ cfg Config }

var _ loop.Compactor = (*Compactor)(nil)

// New makes an agent's compactor.
func New(cfg Config) *Compactor { return &Compactor{cfg: cfg} }

// ShouldCompact reports whether the last response's input came past the threshold.
func (c *Compactor) ShouldCompact(lastInput int64) bool {
	if lastInput <= 0 || c.cfg.Threshold == nil {
		return false
	}
	t := c.cfg.Threshold()
	return t > 0 && lastInput >= t
}

// Compact summarises history with a request that reads the agent's prompt cache and writes
// nothing to it, records the boundary and returns the history to continue from, with what
// the request used.
func (c *Compactor) Compact(ctx context.Context, history []message.Message, trigger string) (_ []message.Message, used cost.Ledger, _ error) {
	var extra string
	if c.cfg.Before != nil {
		if more := c.cfg.Before(ctx, trigger); len(more) > 0 {
			extra = "\n\nAlso keep in mind:\n" + strings.Join(more, "\n")
		}
	}
	ask := append(append([]message.Message(nil), history...), message.User(message.Text(Prompt+extra)))
	req := c.request(ctx, loop.Merge(ask), history)
	// Announced before the request, so the new prefix it creates is never reported as a break.
	if c.cfg.Announce != nil {
		c.cfg.Announce("compaction")
	}
	done, err := provider.Complete(ctx, c.cfg.Provider, req)
	if err != nil {
		return nil, used, fmt.Errorf("compaction request: %w", err)
	}
	model := cmp.Or(done.Model, req.Model)
	used.Add(model, done.Usage)
	if c.cfg.Meter != nil {
		c.cfg.Meter.Add(model, done.Usage)
	}
	summary := done.Message.TextOf()
	if strings.TrimSpace(summary) == "" {
		return nil, used, errors.New("the model returned an empty summary")
	}
	boundary := ""
	if c.cfg.Record != nil {
		if boundary, err = c.cfg.Record(context.WithoutCancel(ctx), summary); err != nil {
			return nil, used, err
		}
	}
	if c.cfg.Emit != nil {
		c.cfg.Emit(event.Compacted{Origin: c.cfg.Origin, Trigger: trigger, TokensBefore: done.Usage.TotalInput()})
	}
	if c.cfg.After != nil {
		c.cfg.After(ctx, trigger, summary, boundary)
	}
	return []message.Message{SummaryMessage(summary)}, used, nil
}

// ErrNothingToCompact is a manual compaction's answer when there is no history yet.
var ErrNothingToCompact = errors.New("nothing to compact yet")

// Manual compacts history at the user's request (/compact [instructions]); instructions, when
// given, say what the summary should dwell on and join the history as a user message.
func (c *Compactor) Manual(ctx context.Context, history []message.Message, instructions string) ([]message.Message, cost.Ledger, error) {
	if len(history) == 0 {
		return nil, cost.Ledger{}, ErrNothingToCompact
	}
	if instructions != "" {
		history = append(slices.Clip(history), message.User(message.Text("When summarising, focus on: "+instructions)))
	}
	return c.Compact(ctx, history, "manual")
}

// request is the compaction request for messages (the history and the summary prompt). It
// repeats the agent's newest request byte for byte, so everything that request sent is a
// prefix of this one, and asks for the same provider clearing. Its breakpoints sit where that conversation already has cache entries:
// the tools, the static prompt, and the newest request's last block, so it reads the whole
// shared prefix and writes nothing (the seeds' skipCacheWrite). Without a turn to repeat it
// is built as the next request would be, with a breakpoint where the conversation's last
// request ended (rebuilt from history: [resumedPrefix]), so after a resume it reads as much.
func (c *Compactor) request(ctx context.Context, messages, history []message.Message) *provider.Request {
	req := &provider.Request{
		MaxTokens: MaxTokens, Messages: messages,
		Source: provider.SourceCompact, CacheSource: c.cfg.CacheSource, SkipCacheWrite: true,
	}
	if c.cfg.Model != nil {
		req.Model = c.cfg.Model()
	}
	var last *loop.CacheSafe
	if c.cfg.Last != nil {
		last = c.cfg.Last()
	}
	if last == nil || last.Model != req.Model {
		if c.cfg.System != nil {
			req.System = c.cfg.System(ctx).Blocks
		}
		if c.cfg.Tools != nil {
			req.Tools = c.cfg.Tools(ctx)
		}
		if last == nil {
			req.SharedPrefix = resumedPrefix(history, messages)
		}
		if c.cfg.Prepare != nil {
			c.cfg.Prepare(req)
		}
		return req
	}
	req.System, req.Tools, req.Thinking = last.System.Blocks, last.Tools, last.Thinking
	// The provider's clearing, when the conversation has it, applies to the summary request
	// as to the request it repeats (the summary prompt adds no tool use): the provider clears
	// the same results, so the edited prefix it cached is read.
	req.ClearToolResults = last.ClearToolResults
	if req.Thinking != nil && req.Thinking.BudgetTokens >= req.MaxTokens {
		req.MaxTokens = req.Thinking.BudgetTokens + MaxTokens
	}
	req.SharedPrefix = sharedEnd(last.Messages[:len(last.Messages)-1], messages)
	if c.cfg.Breakpoints != nil {
		c.cfg.Breakpoints(req)
	}
	return req
}

// resumedPrefix is where the conversation's last request ended, rebuilt from history when no
// request of this process can be repeated (a compaction right after resuming): that request
// sent the history up to its newest assistant message — the reply it got — or all of it when
// it got none, and wrote a cache entry at its end. Nil when messages do not start with it.
func resumedPrefix(history, messages []message.Message) *provider.BlockRef {
	end := len(history)
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Role == message.RoleAssistant {
			end = i
			break
		}
	}
	return sharedEnd(loop.Merge(history[:end]), messages)
}

// sharedEnd is the last markable block of sent, the messages an earlier request sent, when
// messages start with them (the last one may have grown since); else nil.
func sharedEnd(sent, messages []message.Message) *provider.BlockRef {
	if len(sent) == 0 || len(sent) > len(messages) || !sameJSON(sent[:len(sent)-1], messages[:len(sent)-1]) ||
		!hasPrefixBlocks(messages[len(sent)-1], sent[len(sent)-1]) {
		return nil
	}
	if i := provider.LastMarkable(sent[len(sent)-1].Content); i >= 0 {
		return &provider.BlockRef{Message: len(sent) - 1, Block: i}
	}
	return nil
}

// hasPrefixBlocks reports whether m starts with every block of prefix: the message the
// previous request ended with may have grown since (results and notes merged into it).
func hasPrefixBlocks(m, prefix message.Message) bool {
	return m.Role == prefix.Role && len(m.Content) >= len(prefix.Content) && sameJSON(m.Content[:len(prefix.Content)], prefix.Content)
}

// sameJSON compares as the request bytes would: a nil and an empty slice are the same.
func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// Threshold is the input size, in tokens, past which a history is compacted: percent (0:
// [DefaultPercent]) of window.
func Threshold(window int64, percent float64) int64 {
	if percent <= 0 {
		percent = DefaultPercent
	}
	return int64(float64(window) * percent / 100)
}
