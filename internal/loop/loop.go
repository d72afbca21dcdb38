// Package loop is the query loop every agent runs: assemble a request, stream the response,
// run the tool batch, absorb observations, repeat. The main thread, subagents, fork children
// and teammates all run this same loop with their own Agent value.
package loop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/keel-dev/keel/internal/clearing"
	"github.com/keel-dev/keel/internal/cost"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/tool"
)

// Observer is consulted at every request boundary. What it returns is added to the next
// request (as text blocks of the user message that opens it), never to one already sent. MCP
// generation changes, finished background agents and mailbox messages arrive this way.
type Observer interface {
	Observe(ctx context.Context) []message.Block
}

// Sink receives what the loop produces. The session implements it: events go to the caller,
// messages to the transcript.
type Sink interface {
	Emit(e event.Event)
	// Append persists a message that joined the history and returns its entry id.
	Append(ctx context.Context, m message.Message) (uuid string, err error)
	// EndTurn marks the end of a model turn (the transcript is synced there).
	EndTurn(ctx context.Context) error
}

// CacheWatcher is told about every request before it is sent and about the usage after, so it
// can explain prompt-cache misses. sections names the request's system blocks.
type CacheWatcher interface {
	BeforeSend(req *provider.Request, sections []string) []event.CacheBreak
	AfterResponse(u message.Usage) []event.CacheBreak
}

// ProviderClearDeclarer is a [CacheWatcher] that can be told, before the usage of a response,
// how many tool results the provider cleared from that request's prompt: when the number
// changes, the provider rewrote the prompt from the first newly cleared result on, on purpose.
type ProviderClearDeclarer interface {
	ProviderCleared(toolUses int64)
}

// BreakDeclarer is a [CacheWatcher] that can be told of a prefix change made on purpose: the
// messages from index from on (as sent, merged) change in the next request.
type BreakDeclarer interface {
	Declare(from int, reason string)
}

// System is a rendered system prompt: the blocks sent and a name for each, so cache
// diagnostics can say which section changed.
type System struct {
	Blocks []provider.SystemBlock
	Names  []string
}

// StopChecker runs when the model ends its turn without tool calls. A non-empty reason keeps
// the loop going with that reason as the next user message (a Stop hook's exit 2).
type StopChecker interface {
	CheckStop(ctx context.Context, last message.Message, active bool) (reason string)
}

// Compactor summarises a history that grew too close to the context window. The loop asks
// before every request, with the input size the last response reported.
type Compactor interface {
	ShouldCompact(lastInputTokens int64) bool
	// Compact returns the history to continue from (the summary) and what its requests used;
	// it records and announces the boundary itself.
	Compact(ctx context.Context, history []message.Message, trigger string) ([]message.Message, cost.Ledger, error)
}

// Meter counts what responses cost as they arrive, across every agent of a session, so a
// budget sees a child's spend while the child still runs. Implementations are safe for
// concurrent use.
type Meter interface {
	Add(model string, u message.Usage)
}

// Agent is one agent's configuration and mutable state for the loop.
type Agent struct {
	Origin    event.Origin
	Provider  provider.Provider
	Model     string
	MaxTokens int64
	Thinking  *provider.Thinking
	// System renders the system prompt for the next request. Its sections are memoized, so
	// it returns the same bytes every time unless a declared uncached section changed.
	System func(ctx context.Context) System
	// Pool returns the tools for the next request; asked once per request boundary, after the
	// observers, so a new MCP generation reaches the very next request.
	Pool func(ctx context.Context) *tool.Pool
	// Lookup, if set, finds tools the pool no longer offers (an MCP tool of a failed server),
	// so a call to one is answered with the tool's own clear error.
	Lookup    func(name string) (tool.Tool, bool)
	Gate      tool.Gate
	Validator *tool.Validator
	Files     *tool.FileState
	State     tool.State
	SessionID string
	// MaxTurns caps model requests in one Run; 0 means no cap.
	MaxTurns int
	// Source names the query source (cache TTL, logs).
	Source    string
	Observers []Observer
	// Prepare is applied to every assembled request before it is sent (cache breakpoints).
	Prepare func(*provider.Request)
	Watch   CacheWatcher
	Stop    StopChecker
	Compact Compactor
	Sink    Sink
	Logger  *slog.Logger
	// Traceparent, if set, gives each tool call the TRACEPARENT of its span (telemetry), for
	// the processes it starts; Environ, if set, is those processes' environment
	// ([tool.Env.Environ]).
	Traceparent func(toolUseID string) string
	Environ     func() []string
	// AfterTurn, if set, is called with the request of every completed turn.
	AfterTurn func(req *provider.Request, sys System, reply message.Message)
	// Check, if set, is asked before every request but the first whether the run is over
	// before the model is asked again: a structured answer was given, the budget is spent.
	// It may set out.Text; subtype is how the run ended.
	Check func(out *Outcome) (subtype string, stop bool)
	// Admit, if set, is asked before a run's first request whether the run may ask the model
	// at all: an agent another agent started or woke ends, having asked nothing, when the
	// session's budget was spent before it began. It may set out.Text; subtype is how the run
	// ended.
	Admit func(out *Outcome) (subtype string, stop bool)
	// Meter, if set, is told the usage of every response as it arrives.
	Meter Meter
	// Clear, if set, replaces the oldest tool results with stubs when the context grew past
	// its threshold and clearing pays (package clearing); Watch is told first, when it is a
	// [BreakDeclarer].
	Clear *clearing.Clearer
	// ClearByProvider, if set, asks the provider to clear old tool results itself, on every
	// request (Anthropic's context editing); the history keel keeps and sends stays whole.
	// Watch is told what each response says was cleared, when it is a
	// [ProviderClearDeclarer]. Set it or Clear, not both.
	ClearByProvider *provider.ToolResultClearing

	// mu guards saved.
	mu    sync.Mutex
	saved *CacheSafe
}

// CacheSafe is what the last completed turn sent, kept so a fork child or a post-turn helper
// can send a request whose prefix is the parent's byte for byte: the rendered system prompt,
// the exact tool list, the model and thinking settings, and the messages including the reply.
type CacheSafe struct {
	System   System
	Tools    []provider.ToolSpec
	Model    string
	Thinking *provider.Thinking
	// Messages are the request's messages (merged as sent, without cache markers) followed by
	// the model's reply.
	Messages []message.Message
	// ClearToolResults is the provider's clearing the request asked for: the prompt the
	// provider cached is the history with it applied, so a request repeating this prefix asks
	// for it too.
	ClearToolResults *provider.ToolResultClearing
}

// Outcome is how a Run ended.
type Outcome struct {
	Messages []message.Message
	// Turns counts model requests; ToolBatches the tool batches run between them.
	Turns       int
	ToolBatches int
	Usage       message.Usage
	// Ledger is Usage by the model each response reported, priced request by request, and
	// what the run's compactions used.
	Ledger      cost.Ledger
	APIDuration time.Duration
	StopReason  message.StopReason
	// Subtype follows the result subtypes of stream-json: success, error_max_turns,
	// error_during_execution.
	Subtype string
	Text    string

	lastUsage message.Usage
	// pending is the reply streamed last, announced when it is appended.
	pending *event.AssistantMessage
}

// SubtypeMaxBudget is how a run ends that its Check stopped because the session's budget
// is spent.
const SubtypeMaxBudget = "error_max_budget_usd"

// ErrInterrupted is the cause of a context cancelled by the user.
var ErrInterrupted = errors.New("interrupted by user")

// maxContinuations bounds how often a reply cut at max_tokens is continued.
const maxContinuations = 3

// continuePrompt asks the model to go on after its output hit max_tokens.
const continuePrompt = "Your previous reply hit the output token limit. Continue exactly where it stopped, without repeating anything."

// runState is what one Run carries from turn to turn.
type runState struct {
	// continuations counts replies cut at max_tokens that were continued.
	continuations int
	// stopActive says a Stop check already sent the model back once.
	stopActive bool
	// lastInput is the newest request's input tokens, for the compaction check.
	lastInput int64
	streak    invalidStreak
	// repaired says a history the API refused was repaired once already.
	repaired bool
}

// Run continues the conversation in history (which must end with a user message) until the
// model is done, a limit is reached or ctx is cancelled. The returned Outcome holds the whole
// history, valid to send again even after an interrupt.
func (a *Agent) Run(ctx context.Context, history []message.Message) (*Outcome, error) {
	if a.Logger == nil {
		a.Logger = slog.New(slog.DiscardHandler)
	}
	out := &Outcome{Messages: history, Subtype: "success"}
	var rs runState
	for {
		if a.limitReached(out) {
			return out, nil
		}
		if err := a.absorb(ctx, out); err != nil {
			return a.fail(out, err)
		}
		if err := a.compactIfFull(ctx, out, &rs); err != nil {
			return a.fail(out, err)
		}
		pool := a.pool(ctx)
		stable := a.clearStale(ctx, out, pool)
		req, sys := a.assemble(ctx, out.Messages, pool, stable)
		done, invalid, err := a.stream(ctx, req, sys, out)
		if err != nil {
			if !rs.repaired && a.repair(out, err) {
				rs.repaired = true
				continue
			}
			return a.fail(out, err)
		}
		reply := done.Message
		if err := a.takeReply(ctx, out, &rs, req, sys, reply); err != nil {
			return a.fail(out, err)
		}
		var more bool
		if calls := toolCalls(reply); len(calls) > 0 {
			more, err = a.runTools(ctx, out, &rs, calls, invalid)
		} else {
			more, err = a.finishTurn(ctx, out, &rs, reply)
		}
		if err != nil {
			return a.fail(out, err)
		}
		if !more {
			return out, nil
		}
	}
}

// limitReached says the run must end before its next request: the turn limit is reached,
// or Check (Admit before the first request) stopped it; out says why.
func (a *Agent) limitReached(out *Outcome) bool {
	if a.MaxTurns > 0 && out.Turns >= a.MaxTurns {
		out.Subtype = "error_max_turns"
		out.Text = fmt.Sprintf("Reached maximum number of turns (%d)", a.MaxTurns)
		return true
	}
	check := a.Check
	if out.Turns == 0 {
		check = a.Admit
	}
	if check != nil {
		if subtype, stop := check(out); stop {
			out.Subtype = subtype
			return true
		}
	}
	return false
}

// compactIfFull compacts the history when the newest request's input says the context is
// full.
func (a *Agent) compactIfFull(ctx context.Context, out *Outcome, rs *runState) error {
	if a.Compact == nil || !a.Compact.ShouldCompact(rs.lastInput) {
		return nil
	}
	compacted, used, err := a.Compact.Compact(ctx, out.Messages, "auto")
	out.Ledger.Merge(used)
	if err != nil {
		return fmt.Errorf("compact history: %w", err)
	}
	out.Messages = compacted
	rs.lastInput = 0
	if a.Clear != nil {
		a.Clear.Reset("compaction")
	}
	return nil
}

// takeReply counts a streamed reply as a turn and adds it to the history; what the request
// sent is kept for forks and the AfterTurn hook.
func (a *Agent) takeReply(ctx context.Context, out *Outcome, rs *runState, req *provider.Request, sys System, reply message.Message) error {
	out.Turns++
	rs.lastInput = out.lastUsage.TotalInput()
	if a.Clear != nil {
		a.Clear.Sent(req, rs.lastInput)
	}
	if err := a.appendMessage(ctx, out, reply); err != nil {
		return err
	}
	a.saveCacheSafe(req, sys, reply)
	if a.AfterTurn != nil {
		a.AfterTurn(req, sys, reply)
	}
	return nil
}

// runTools runs the reply's tool calls and adds their results; more is false when the run
// stops because the model repeats an invalid call.
func (a *Agent) runTools(ctx context.Context, out *Outcome, rs *runState, calls []tool.Call, invalid map[string]string) (more bool, err error) {
	results, each := a.runBatch(ctx, calls, invalid)
	if err := a.appendMessage(ctx, out, results); err != nil {
		return false, err
	}
	if err := a.endTurn(ctx); err != nil {
		return false, err
	}
	if ctx.Err() != nil {
		return false, context.Cause(ctx)
	}
	// An interrupted batch began no turn; one that finished did (NumTurns).
	out.ToolBatches++
	if rs.streak.observe(calls, a.guarded(ctx, calls, invalidCalls(calls, invalid, each))) {
		out.Text = rs.streak.explain()
		a.Logger.Warn("run stopped: repeated invalid tool call", "count", rs.streak.count)
		out.Subtype = "error_during_execution"
		return false, nil
	}
	return true, nil
}

// finishTurn ends a turn without tool calls: a reply cut at max_tokens is continued, a
// Stop check may send the model back; otherwise the run is done with the reply's text.
func (a *Agent) finishTurn(ctx context.Context, out *Outcome, rs *runState, reply message.Message) (more bool, err error) {
	if err := a.endTurn(ctx); err != nil {
		return false, err
	}
	if out.StopReason == message.StopMaxTokens && rs.continuations < maxContinuations {
		rs.continuations++
		return true, a.appendMessage(ctx, out, message.User(message.Text(continuePrompt)))
	}
	if a.Stop != nil {
		if reason := a.Stop.CheckStop(ctx, reply, rs.stopActive); reason != "" {
			rs.stopActive = true
			return true, a.appendMessage(ctx, out, message.User(message.Text(reason)))
		}
	}
	out.Text = reply.TextOf()
	return false, nil
}

func (a *Agent) fail(out *Outcome, err error) (*Outcome, error) {
	out.Subtype = "error_during_execution"
	return out, err
}

// absorb asks every observer for news and adds it to the user message that will open the next
// request. The history always ends with a user message here.
func (a *Agent) absorb(ctx context.Context, out *Outcome) error {
	var news []message.Block
	for _, o := range a.Observers {
		news = append(news, o.Observe(ctx)...)
	}
	if len(news) == 0 {
		return nil
	}
	return a.appendMessage(ctx, out, message.User(news...))
}

func (a *Agent) endTurn(ctx context.Context) error {
	if a.Sink == nil {
		return nil
	}
	// The sync at the end of a turn must happen even when the turn was interrupted.
	return a.Sink.EndTurn(context.WithoutCancel(ctx))
}

// appendMessage adds m to the history, merging consecutive user messages so the API's
// alternation holds, and persists it.
func (a *Agent) appendMessage(ctx context.Context, out *Outcome, m message.Message) error {
	out.Messages = append(out.Messages, m)
	if a.Sink == nil {
		return nil
	}
	uuid, err := a.Sink.Append(context.WithoutCancel(ctx), m)
	if err != nil {
		return fmt.Errorf("record message: %w", err)
	}
	switch {
	case m.Role == message.RoleUser:
		a.Sink.Emit(event.UserMessage{Origin: a.Origin, UUID: uuid, Message: m})
	case out.pending != nil:
		// The reply is announced once recorded, so its event carries its transcript id.
		done := *out.pending
		out.pending = nil
		done.UUID = uuid
		a.Sink.Emit(done)
	}
	return nil
}

func (a *Agent) saveCacheSafe(req *provider.Request, sys System, reply message.Message) {
	msgs := make([]message.Message, 0, len(req.Messages)+1)
	for _, m := range req.Messages {
		c := m.Clone()
		message.StripCacheControl(c.Content)
		msgs = append(msgs, c)
	}
	tools := make([]provider.ToolSpec, len(req.Tools))
	for i, t := range req.Tools {
		t.CacheControl = nil
		tools[i] = t
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.saved = &CacheSafe{System: sys, Tools: tools, Model: req.Model, Thinking: req.Thinking, Messages: append(msgs, reply),
		ClearToolResults: req.ClearToolResults}
}

// LastCacheSafe returns the cache-safe parameters of the newest completed turn, or nil before
// the first. It may be called from the agent's tools while the loop runs.
func (a *Agent) LastCacheSafe() *CacheSafe {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.saved
}
