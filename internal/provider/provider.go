// Package provider defines how keel talks to a model: a Provider streams one Request and yields
// typed stream events. Adapters live below (anthropic, openai); scripted is the offline model
// server used by the demo and the tests. Retries and cache-breakpoint placement live here so
// every adapter gets the same behaviour.
package provider

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"time"

	"github.com/keel-dev/keel/internal/message"
)

// Provider streams one model request. The sequence ends after a Done event, or with a non-nil
// error. Implementations do not retry; wrap them with [Retrying].
type Provider interface {
	Stream(ctx context.Context, req *Request) iter.Seq2[Event, error]
}

// Request is everything one model call sends. It is assembled fresh for every call by the loop;
// its encoding must be a pure function of its fields so equal requests are equal bytes.
type Request struct {
	Model     string
	MaxTokens int64
	System    []SystemBlock
	Tools     []ToolSpec
	Messages  []message.Message
	Thinking  *Thinking
	// Source names who asks ("main", "agent:Explore", "compact", …); it picks the cache TTL and
	// labels logs and cache diagnostics. It is not sent.
	Source string
	// SharedPrefix, when set, is the last block of a prefix other requests repeat: the fork
	// children of one turn share everything up to their own directive. [PlaceBreakpoints]
	// marks it, so the first of them writes that prefix to the cache and the others read it.
	SharedPrefix *BlockRef
	// SkipCacheWrite marks a request whose own prefix is never reused (a compaction, whose
	// history is replaced by the summary it asks for). Its breakpoints go only where the
	// conversation it repeats already has cache entries — the tool list, the static system
	// prompt and SharedPrefix (that conversation's newest entry) — and use CacheSource's TTL,
	// so the request reads the cache and writes nothing to it.
	SkipCacheWrite bool
	// CacheSource, when set, is the query source whose cache entries the request reads, for
	// the TTL of its breakpoints (a compaction reads the main conversation's: "main").
	CacheSource string
	// Metadata the API accepts verbatim (e.g. user_id); kept in sorted-key order when encoded.
	Metadata map[string]string
	// ClearToolResults, when set, asks the provider to clear old tool results itself before
	// the model sees the prompt (Anthropic's context editing). Only a provider that reports
	// the ability ([SupportsToolResultClearing]) may be sent one.
	ClearToolResults *ToolResultClearing
}

// ToolResultClearing is the provider's own clearing of stale tool results: once the prompt
// passes Trigger input tokens, the result of every tool use but the newest Keep is replaced
// by a placeholder, unless that frees fewer than ClearAtLeast tokens. The provider applies it
// to the whole history of every request it is sent with, so the history the client keeps and
// sends stays whole.
type ToolResultClearing struct {
	Trigger      int64
	Keep         int
	ClearAtLeast int64
}

// BlockRef names one content block of a request's messages, by message and block index.
type BlockRef struct {
	Message, Block int
}

// SystemBlock is one text block of the system prompt.
type SystemBlock struct {
	Text         string
	CacheControl *message.CacheControl
}

// ToolSpec is a tool as the model sees it.
type ToolSpec struct {
	Name         string
	Description  string
	InputSchema  json.RawMessage
	CacheControl *message.CacheControl
	// DeferLoading asks a provider that supports it to list the tool by name only until it is
	// searched for (MCP tool search).
	DeferLoading bool
	// Raw is the whole definition of a server tool the provider runs itself (web search),
	// sent verbatim; Name names it and the other fields are unused. Only providers that
	// report the ability (see [SupportsServerWebSearch]) accept one.
	Raw json.RawMessage
}

// Thinking turns on extended thinking with a token budget.
type Thinking struct {
	BudgetTokens int64
}

// Event is one typed event of a response stream.
type Event interface{ providerEvent() }

// TextDelta is streamed assistant text for the content block at Index.
type TextDelta struct {
	Index int
	Text  string
}

// ThinkingDelta is streamed thinking text.
type ThinkingDelta struct {
	Index    int
	Thinking string
}

// ToolUseStart opens a tool_use block; its input arrives as InputDelta events.
type ToolUseStart struct {
	Index int
	ID    string
	Name  string
}

// InputDelta is a fragment of a tool_use block's JSON input.
type InputDelta struct {
	Index       int
	PartialJSON string
}

// Retrying says the attempt failed and the response so far must be thrown away: a consumer
// that accumulated deltas resets before the next attempt's events arrive.
type Retrying struct {
	Attempt int // the attempt that failed, from 1
	// MaxAttempts is how many attempts will be made in all.
	MaxAttempts int
	Delay       time.Duration
	Err         error
}

// Done ends a successful stream with the whole assistant message, assembled from the deltas.
type Done struct {
	Message    message.Message
	StopReason message.StopReason
	Usage      message.Usage
	Model      string
	RequestID  string
	// ClearedToolUses and ClearedInputTokens say what the provider's own clearing
	// ([Request.ClearToolResults]) removed from this request's prompt: zero when it cleared
	// nothing or was not asked to.
	ClearedToolUses, ClearedInputTokens int64
}

func (TextDelta) providerEvent()     {}
func (ThinkingDelta) providerEvent() {}
func (ToolUseStart) providerEvent()  {}
func (InputDelta) providerEvent()    {}
func (Retrying) providerEvent()      {}
func (Done) providerEvent()          {}

// ErrIncomplete is returned by [Complete] for a stream that ended without a Done event.
var ErrIncomplete = errors.New("the response ended before it was complete")

// Complete streams req and returns the finished response, for callers that want the whole
// message rather than its deltas (compaction, the permission classifier, WebFetch's reader).
func Complete(ctx context.Context, p Provider, req *Request) (*Done, error) {
	for ev, err := range p.Stream(ctx, req) {
		if err != nil {
			return nil, err
		}
		if d, ok := ev.(Done); ok {
			return &d, nil
		}
	}
	return nil, ErrIncomplete
}
