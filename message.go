package keel

import "encoding/json"

// Role is who wrote a message: "user" or "assistant".
type Role string

// The two roles of a conversation.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Block types, as the Messages API names them.
const (
	BlockText             = "text"
	BlockThinking         = "thinking"
	BlockRedactedThinking = "redacted_thinking"
	BlockToolUse          = "tool_use"
	BlockToolResult       = "tool_result"
	BlockImage            = "image"
)

// Message is one user or assistant turn of the conversation, as the Messages API shapes it.
type Message struct {
	Role    Role    `json:"role"`
	Content []Block `json:"content"`
}

// Block is one content block of a [Message]. Only the fields of its Type are set.
type Block struct {
	// Type is one of the Block constants.
	Type string `json:"type"`

	// Text is a text block's text; Citations the sources it cites (a server web search's
	// results), as the provider sent them.
	Text      string          `json:"text,omitempty"`
	Citations json.RawMessage `json:"citations,omitempty"`

	// Thinking and Signature are a thinking block's; Data a redacted one's.
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`

	// ID, Name and Input are a tool_use block's: the call's id, the tool and its input.
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`

	// ToolUseID, Content and IsError are a tool_result block's: the call answered, the
	// result's blocks and whether it is an error.
	ToolUseID string  `json:"tool_use_id,omitempty"`
	Content   []Block `json:"content,omitempty"`
	IsError   bool    `json:"is_error,omitempty"`

	// Source is an image block's picture.
	Source *ImageSource `json:"source,omitempty"`

	// Raw is a block keel does not interpret (a server tool's use and result), as the
	// provider sent it; Type still names it.
	Raw json.RawMessage `json:"raw,omitempty"`
}

// ImageSource is an inline base64 image.
type ImageSource struct {
	Type      string `json:"type"` // "base64"
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

// TextBlock returns a text block, as a tool's result holds one.
func TextBlock(s string) Block { return Block{Type: BlockText, Text: s} }

// TextOf joins the text blocks of a message, the way a reader sees the reply.
func (m Message) TextOf() string {
	var out []byte
	for _, b := range m.Content {
		if b.Type == BlockText {
			out = append(out, b.Text...)
		}
	}
	return string(out)
}

// ToolUses returns the tool_use blocks of a message in the model's order.
func (m Message) ToolUses() []Block {
	var uses []Block
	for _, b := range m.Content {
		if b.Type == BlockToolUse {
			uses = append(uses, b)
		}
	}
	return uses
}

// Usage is token accounting, as the provider reports it.
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	// CacheCreation1hInputTokens is the part of CacheCreationInputTokens written with the
	// one-hour TTL, which costs more than the five-minute rest.
	CacheCreation1hInputTokens int64 `json:"cache_creation_1h_input_tokens,omitempty"`
	// WebSearchRequests counts the provider's server-side web searches, billed per search.
	WebSearchRequests int64 `json:"web_search_requests,omitempty"`
}

// TotalInput is every input token, cached or not.
func (u Usage) TotalInput() int64 {
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}

// StopReason says why the model stopped: end_turn, tool_use, max_tokens, stop_sequence,
// refusal or pause_turn.
type StopReason string
