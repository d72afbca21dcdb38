package scripted

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Scenario is what the scripted model answers: ordered rules, a fallback and cache settings.
// Load one from YAML with [LoadScenario] or [ParseScenario], or build it in Go. A Scenario is
// read-only once a [Server] uses it; the server keeps its own per-rule fire counts.
type Scenario struct {
	// Rules are tried in order; the first whose When matches and whose Times is not used up
	// answers the request.
	Rules []Rule
	// Fallback answers when no rule matches. Nil means the built-in short text reply
	// ([DefaultFallbackText]). Its When and Times are ignored.
	Fallback *Rule
	// Cache tunes prompt-cache accounting; the zero value follows Anthropic's defaults.
	Cache CacheConfig
}

// DefaultFallbackText is the reply when no rule matches and the scenario has no fallback.
const DefaultFallbackText = "(scripted model: no rule matched this request)"

// Rule is one scripted answer and the request features it applies to.
type Rule struct {
	// Name labels the rule in the request log; empty means "rule N" (1-based).
	Name string
	// When holds the conditions; all non-zero fields must hold. The zero Match matches every
	// request.
	When Match
	// Times limits how often the rule fires; 0 means unlimited.
	Times int
	// Reply is the content of the answer, in order.
	Reply []Block
	// StopReason overrides the stop reason ("end_turn", "tool_use", "max_tokens",
	// "stop_sequence", "pause_turn", "refusal"). Empty means tool_use when Reply holds a
	// tool_use block, else end_turn.
	StopReason string
	// Fault, if set, makes the answer fail in the given way.
	Fault *Fault
}

// Match is the set of request features a rule requires. Texts are case-sensitive substrings.
// The "last user message" is the final user message of the request; for chat completions it is
// the run of user and tool messages after the last assistant message.
type Match struct {
	// UserText must occur in the text blocks of the last user message (tool results excluded).
	UserText string
	// ToolResult names a tool: the last user message must hold a tool result for a tool_use
	// of that name (found through the tool_use id in an earlier assistant message).
	ToolResult string
	// HasTool must be in the request's tool list; LacksTool must not be.
	HasTool   string
	LacksTool string
	// Request is the 1-based number of the request among all model requests the server has
	// received (retries count).
	Request int
	// System must occur in the system prompt.
	System string
	// Contains must occur anywhere in the last user message, tool results included.
	Contains string
	// Model must occur in the request's model name.
	Model string
}

// BlockKind is the type of a reply block.
type BlockKind string

// Reply block kinds.
const (
	KindText     BlockKind = "text"
	KindThinking BlockKind = "thinking"
	KindToolUse  BlockKind = "tool_use"
	// KindToolSearch is a search by the API's own tool search tool: it is answered as a
	// server_tool_use block and a tool_search_tool_result block referencing Found. Chat
	// completions have no server tool search and leave it out.
	KindToolSearch BlockKind = "tool_search"
)

// Block is one content block of a scripted reply.
type Block struct {
	Kind BlockKind
	// Text is the text of a text block or the thinking of a thinking block.
	Text string
	// Name and Input describe a tool_use block. Input must be a JSON object; nil means {}.
	Name  string
	Input json.RawMessage
	// RawInput, when set, replaces Input and is streamed verbatim as input_json_delta
	// fragments, valid JSON or not: models do send broken tool input, and keel's tests need
	// one that does. Non-streaming answers carry {} instead.
	RawInput string
	// Found names the deferred tools a tool_search block finds (its query is Text).
	Found []string
	// Results are what a web_search block finds (its query is Text); Answer, if set, is a
	// text block after it citing them; SearchError makes the search fail with that
	// error_code instead.
	Results     []WebResult
	Answer      string
	SearchError string
}

// Text returns a text block.
func Text(s string) Block { return Block{Kind: KindText, Text: s} }

// Thinking returns a thinking block.
func Thinking(s string) Block { return Block{Kind: KindThinking, Text: s} }

// ToolUse returns a tool_use block whose input is v encoded as JSON. It panics if v cannot be
// encoded, which is a programmer error in a test.
func ToolUse(name string, v any) Block {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("scripted.ToolUse %s: %v", name, err))
	}
	return Block{Kind: KindToolUse, Name: name, Input: b}
}

// ToolSearch returns a server-side tool search for query that finds the named deferred tools.
func ToolSearch(query string, found ...string) Block {
	return Block{Kind: KindToolSearch, Text: query, Found: found}
}

// Fault is a failure injected into one answer.
type Fault struct {
	// Status, if non-zero, answers with this HTTP status and an error body in the API's shape
	// instead of a reply (429 rate_limit_error, 529 overloaded_error, 500 api_error, …).
	Status int
	// RetryAfter and RetryAfterMS set the retry-after (seconds) and retry-after-ms headers of
	// a Status answer when non-zero.
	RetryAfter   int
	RetryAfterMS int
	// Message is the error message; empty means a default for the status.
	Message string
	// DropAfter, if non-zero, closes the TCP connection after that many stream events (SSE
	// events or chat-completion chunks) were sent. Non-streaming answers are dropped before
	// the body is written.
	DropAfter int
	// Delay is waited before every stream event (and before a non-streaming body).
	Delay time.Duration
}

// CacheConfig tunes prompt-cache accounting.
type CacheConfig struct {
	// MinTokens is the minimum cacheable prefix length; 0 means 1024. A breakpoint whose
	// prefix is shorter writes nothing.
	MinTokens int
	// Lookback is how many block positions, counting the breakpoint's own, are searched for
	// an earlier cache entry; 0 means 20.
	Lookback int
}

func (c CacheConfig) minTokens() int {
	if c.MinTokens > 0 {
		return c.MinTokens
	}
	return 1024
}

func (c CacheConfig) lookback() int {
	if c.Lookback > 0 {
		return c.Lookback
	}
	return 20
}

// validStopReasons are the stop reasons the Messages API reports.
var validStopReasons = []string{"end_turn", "tool_use", "max_tokens", "stop_sequence", "pause_turn", "refusal"}

// Validate reports the first inconsistency of a Scenario built in Go.
func (sc *Scenario) Validate() error {
	for i := range sc.Rules {
		if err := sc.Rules[i].validate(); err != nil {
			return fmt.Errorf("rule %d: %w", i+1, err)
		}
	}
	if sc.Fallback != nil {
		if err := sc.Fallback.validate(); err != nil {
			return fmt.Errorf("fallback: %w", err)
		}
	}
	return nil
}

func (r *Rule) validate() error {
	if r.Times < 0 {
		return fmt.Errorf("times %d is negative", r.Times)
	}
	if r.StopReason != "" && !slices.Contains(validStopReasons, r.StopReason) {
		return fmt.Errorf("stop_reason %q is not one of %s", r.StopReason, joinValid(validStopReasons))
	}
	for j, b := range r.Reply {
		switch b.Kind {
		case KindText, KindThinking:
		case KindToolUse:
			if b.Name == "" {
				return fmt.Errorf("reply block %d: tool_use needs a name", j+1)
			}
			if len(b.Input) > 0 && b.RawInput == "" {
				var obj map[string]json.RawMessage
				if err := json.Unmarshal(b.Input, &obj); err != nil {
					return fmt.Errorf("reply block %d: tool_use input is not a JSON object: %w", j+1, err)
				}
			}
		case KindToolSearch:
			if len(b.Found) == 0 {
				return fmt.Errorf("reply block %d: tool_search needs found tools", j+1)
			}
		case KindWebSearch:
			if b.Text == "" {
				return fmt.Errorf("reply block %d: web_search needs a query", j+1)
			}
		default:
			return fmt.Errorf("reply block %d: kind %q is not one of text, thinking, tool_use, tool_search, web_search", j+1, b.Kind)
		}
	}
	if f := r.Fault; f != nil {
		if f.Status != 0 && (f.Status < 400 || f.Status > 599) {
			return fmt.Errorf("fault status %d is not an HTTP error status (400-599)", f.Status)
		}
		if f.DropAfter < 0 || f.Delay < 0 || f.RetryAfter < 0 || f.RetryAfterMS < 0 {
			return fmt.Errorf("fault values must not be negative")
		}
	}
	return nil
}

func joinValid(list []string) string { return strings.Join(list, ", ") }
