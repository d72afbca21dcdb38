// Package message holds the conversation types every other keel package shares: a Message is
// one turn of the Messages API, made of Blocks. It is a leaf: it imports nothing from keel.
//
// The JSON shape mirrors the Anthropic Messages API (snake_case), because the transcript, the
// golden request bodies and the scripted model all speak it; field order is fixed, so encoding a
// Message always gives the same bytes.
package message

import "encoding/json"

// Role is who wrote a message.
type Role string

// The two roles of the Messages API.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Block types, as named on the wire.
const (
	TypeText             = "text"
	TypeThinking         = "thinking"
	TypeRedactedThinking = "redacted_thinking"
	TypeToolUse          = "tool_use"
	TypeToolResult       = "tool_result"
	TypeImage            = "image"
)

// Message is one user or assistant turn.
type Message struct {
	Role    Role    `json:"role"`
	Content []Block `json:"content"`
}

// Block is one content block. Only the fields of its Type are set; the rest stay zero and are
// left out of the JSON.
type Block struct {
	Type string `json:"type"`

	// text
	Text string `json:"text,omitempty"`
	// Citations are the sources a text block cites (a server web search's results), the JSON
	// array as the provider sent it, replayed byte for byte.
	Citations json.RawMessage `json:"citations,omitempty"`

	// thinking: passed back to the model intact, signature included.
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	// redacted_thinking
	Data string `json:"data,omitempty"`

	// tool_use
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`

	// tool_result
	ToolUseID string  `json:"tool_use_id,omitempty"`
	Content   []Block `json:"content,omitempty"`
	IsError   bool    `json:"is_error,omitempty"`

	// image
	Source *ImageSource `json:"source,omitempty"`

	// Raw is a block keel does not interpret — a server tool's use and result (tool search,
	// for one) — as the provider sent it. It is replayed byte for byte, so the history that
	// holds it keeps its cache key; Type still names the block. No other field is set.
	Raw json.RawMessage `json:"raw,omitempty"`

	// CacheControl is set only on the copy of a block inside an outgoing request, where the
	// provider places its cache breakpoints; history never stores it.
	CacheControl *CacheControl `json:"cache_control,omitempty"`
}

// ImageSource is an inline base64 image.
type ImageSource struct {
	Type      string `json:"type"` // "base64"
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

// CacheControl marks a prompt-cache breakpoint.
type CacheControl struct {
	Type string `json:"type"`          // "ephemeral"
	TTL  string `json:"ttl,omitempty"` // "5m" or "1h"; empty means the provider default (5m)
}

// Text returns a text block.
func Text(s string) Block { return Block{Type: TypeText, Text: s} }

// ToolUse returns a tool_use block.
func ToolUse(id, name string, input json.RawMessage) Block {
	return Block{Type: TypeToolUse, ID: id, Name: name, Input: input}
}

// ToolResult returns a tool_result block answering the tool_use with id.
func ToolResult(id string, content []Block, isError bool) Block {
	return Block{Type: TypeToolResult, ToolUseID: id, Content: content, IsError: isError}
}

// User returns a user message of the given blocks.
func User(blocks ...Block) Message { return Message{Role: RoleUser, Content: blocks} }

// Assistant returns an assistant message of the given blocks.
func Assistant(blocks ...Block) Message { return Message{Role: RoleAssistant, Content: blocks} }

// TextOf joins the text blocks of a message, the way a reader sees the reply.
func (m Message) TextOf() string {
	var out []byte
	for _, b := range m.Content {
		if b.Type == TypeText {
			out = append(out, b.Text...)
		}
	}
	return string(out)
}

// ToolUses returns the tool_use blocks of a message in the model's order.
func (m Message) ToolUses() []Block {
	var uses []Block
	for _, b := range m.Content {
		if b.Type == TypeToolUse {
			uses = append(uses, b)
		}
	}
	return uses
}

// Clone returns a deep copy, so a request can mark its copy without touching history.
func (m Message) Clone() Message {
	c := Message{Role: m.Role, Content: make([]Block, len(m.Content))}
	for i, b := range m.Content {
		c.Content[i] = b.clone()
	}
	return c
}

func (b Block) clone() Block {
	if b.Content != nil {
		inner := make([]Block, len(b.Content))
		for i, x := range b.Content {
			inner[i] = x.clone()
		}
		b.Content = inner
	}
	if b.CacheControl != nil {
		cc := *b.CacheControl
		b.CacheControl = &cc
	}
	return b
}

// Usage is the token accounting of one response, as the provider reports it.
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	// CacheCreation1hInputTokens is the part of CacheCreationInputTokens written with the
	// one-hour TTL (the API's cache_creation.ephemeral_1h_input_tokens), which costs more
	// than the five-minute rest.
	CacheCreation1hInputTokens int64 `json:"cache_creation_1h_input_tokens,omitempty"`
	// WebSearchRequests counts the provider's server-side web searches (the API's
	// server_tool_use.web_search_requests), which are billed per search.
	WebSearchRequests int64 `json:"web_search_requests,omitempty"`
}

// Add sums two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens:                u.InputTokens + o.InputTokens,
		OutputTokens:               u.OutputTokens + o.OutputTokens,
		CacheCreationInputTokens:   u.CacheCreationInputTokens + o.CacheCreationInputTokens,
		CacheReadInputTokens:       u.CacheReadInputTokens + o.CacheReadInputTokens,
		CacheCreation1hInputTokens: u.CacheCreation1hInputTokens + o.CacheCreation1hInputTokens,
		WebSearchRequests:          u.WebSearchRequests + o.WebSearchRequests,
	}
}

// Sub is u minus o, counter by counter: what was used between two totals.
func (u Usage) Sub(o Usage) Usage {
	return Usage{
		InputTokens:                u.InputTokens - o.InputTokens,
		OutputTokens:               u.OutputTokens - o.OutputTokens,
		CacheCreationInputTokens:   u.CacheCreationInputTokens - o.CacheCreationInputTokens,
		CacheReadInputTokens:       u.CacheReadInputTokens - o.CacheReadInputTokens,
		CacheCreation1hInputTokens: u.CacheCreation1hInputTokens - o.CacheCreation1hInputTokens,
		WebSearchRequests:          u.WebSearchRequests - o.WebSearchRequests,
	}
}

// TotalInput is every input token of the request, cached or not.
func (u Usage) TotalInput() int64 {
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}

// StopReason says why the model stopped.
type StopReason string

// Stop reasons of the Messages API.
const (
	StopEndTurn      StopReason = "end_turn"
	StopToolUse      StopReason = "tool_use"
	StopMaxTokens    StopReason = "max_tokens"
	StopStopSequence StopReason = "stop_sequence"
	StopRefusal      StopReason = "refusal"
	StopPauseTurn    StopReason = "pause_turn"
)

// HasCacheControl reports whether any of blocks, nested tool-result content included, carries
// a cache breakpoint.
func HasCacheControl(blocks []Block) bool {
	for _, b := range blocks {
		if b.CacheControl != nil || HasCacheControl(b.Content) {
			return true
		}
	}
	return false
}

// StripCacheControl removes the cache breakpoints of blocks in place, nested ones included.
// Callers strip a clone, never history.
func StripCacheControl(blocks []Block) {
	for i := range blocks {
		blocks[i].CacheControl = nil
		StripCacheControl(blocks[i].Content)
	}
}
