// Package event defines what a session tells its caller while it works. It is a leaf: frontends
// (CLI renderers, the TUI, library callers) switch on these types and nothing else.
//
// Every event carries an Origin: which agent produced it (empty for the main thread) and the
// tool_use id of the Agent call that started that agent, so a UI can nest subagent output.
package event

import (
	"encoding/json"
	"time"

	"github.com/keel-dev/keel/internal/message"
)

// Event is one thing that happened in a session.
type Event interface{ From() Origin }

// Origin says which agent an event belongs to.
type Origin struct {
	AgentID         string `json:"agent_id,omitempty"`
	AgentName       string `json:"agent_name,omitempty"`
	ParentToolUseID string `json:"parent_tool_use_id,omitempty"`
}

// From returns the origin itself, so embedding an Origin makes a type an Event.
func (o Origin) From() Origin { return o }

// Init opens a session's event stream.
type Init struct {
	Origin
	SessionID      string
	Model          string
	Cwd            string
	Tools          []string
	PermissionMode string
	MCPServers     []MCPServerStatus
	Agents         []string
	Skills         []string
	// Plugins are the loaded plugins; PluginErrors what went wrong loading them (the Agent
	// SDK's init.plugins and init.plugin_errors).
	Plugins      []PluginInfo
	PluginErrors []PluginError
}

// MCPServerStatus is one configured MCP server as the session sees it: connected, failed
// (with the reason), needs-auth, pending or disabled, and how many tools it offers.
type MCPServerStatus struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	// Source is the configuration scope it came from (user, project, plugin, …).
	Source string `json:"source,omitempty"`
	// Reason and Tools are for UIs; the init line of stream-json has only name, status and
	// source.
	Reason string `json:"-"`
	Tools  int    `json:"-"`
}

// PluginInfo is one loaded plugin.
type PluginInfo struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Version string `json:"version,omitempty"`
	// Source is name@marketplace (name@inline for a folder).
	Source string `json:"source"`
}

// PluginError is one problem loading a plugin, in the Agent SDK's plugin_errors shape.
type PluginError struct {
	Plugin  string `json:"plugin"`
	Type    string `json:"type"`
	Message string `json:"message"`
	Path    string `json:"path,omitempty"`
}

// TextDelta is streamed assistant text.
type TextDelta struct {
	Origin
	Text string
}

// ThinkingDelta is streamed thinking text.
type ThinkingDelta struct {
	Origin
	Thinking string
}

// ToolInputDelta is a fragment of a tool call's JSON input, as the model streams it. ID and
// Name name the call on every fragment; Start marks its first, which opens the call.
type ToolInputDelta struct {
	Origin
	ID, Name    string
	Start       bool
	PartialJSON string
}

// AssistantMessage is a complete assistant message, after its stream ended.
type AssistantMessage struct {
	Origin
	UUID       string
	Message    message.Message
	StopReason message.StopReason
	Usage      message.Usage
	Model      string
	RequestID  string
}

// UserMessage is a user message appended to the history: the prompt, or tool results.
type UserMessage struct {
	Origin
	UUID    string
	Message message.Message
}

// ToolStart says a tool call is about to run (after permission was granted).
type ToolStart struct {
	Origin
	ID    string
	Name  string
	Input json.RawMessage
}

// ToolProgress is a progress note from a running tool.
type ToolProgress struct {
	Origin
	ID      string
	Name    string
	Message string
}

// ToolEnd says a tool call finished.
type ToolEnd struct {
	Origin
	ID       string
	Name     string
	Result   []message.Block
	IsError  bool
	Duration time.Duration
}

// PermissionDenied records a tool call the permission check refused.
type PermissionDenied struct {
	Origin
	ToolUseID string
	ToolName  string
	Input     json.RawMessage
	Reason    string
}

// Retry says a model request failed and is being tried again; any partial text shown for the
// failed attempt is void.
type Retry struct {
	Origin
	Attempt int
	// MaxAttempts is how many attempts are made in all (0 when unknown).
	MaxAttempts int
	Delay       time.Duration
	Err         string
}

// CacheBreak says a request's prefix changed where the cache was expected to hit.
type CacheBreak struct {
	Origin
	Segment string
	Reason  string
}

// Compacted says the history was summarised and the conversation continues from the summary.
type Compacted struct {
	Origin
	Trigger      string // "auto" or "manual"
	TokensBefore int64
}

// Todos is the agent's todo list after a TodoWrite.
type Todos struct {
	Origin
	Items []Todo
}

// Todo is one item of the todo list (TodoWrite's shape).
type Todo struct {
	Content    string `json:"content"`
	Status     string `json:"status"`
	ActiveForm string `json:"activeForm"`
}

// TaskStarted says a background task began.
type TaskStarted struct {
	Origin
	TaskID       string
	ToolUseID    string
	Description  string
	SubagentType string
	TaskType     string
	Prompt       string
}

// TaskUpdated reports a background task's status change or progress.
type TaskUpdated struct {
	Origin
	TaskID string
	Status string
}

// TaskProgress reports a subagent task's work so far: sent after each of its replies that
// calls tools, with its tool calls, tokens and running time since it started.
type TaskProgress struct {
	Origin
	TaskID       string
	ToolUseID    string
	Description  string
	SubagentType string
	Usage        TaskUsage
	LastToolName string
}

// TaskUsage is what an agent task used: TotalTokens counts every token of its requests,
// input (cached and not) and output, as the Agent tool's usage trailer does.
type TaskUsage struct {
	TotalTokens int64
	ToolUses    int
	Duration    time.Duration
}

// TaskNotification says a background task ended and its result is queued for the parent.
type TaskNotification struct {
	Origin
	TaskID    string
	ToolUseID string
	Status    string
	Summary   string
	Result    string
	// Usage is an agent task's use over its run; nil when the task does not know it.
	Usage *TaskUsage
}

// Status reports a change of the session's state that a controlling program shows: the
// permission mode after a switch.
type Status struct {
	Origin
	PermissionMode string
}

// HookStarted says a hook began running for an event; HookResponse says how it ended.
// HookID pairs the two.
type HookStarted struct {
	Origin
	HookID string
	Name   string // the command, or "callback ID" for a hook the controlling program answers
	Event  string
}

// HookResponse is a hook's end: its output and how it went.
type HookResponse struct {
	Origin
	HookID   string
	Name     string
	Event    string
	Stdout   string
	Stderr   string
	ExitCode int
	Outcome  string // success, error or cancelled
}

// Notice is something the user should read that is not part of the conversation: a warning
// about configuration, a torn transcript tail skipped on resume, a hook's output.
type Notice struct {
	Origin
	Level string // "info", "warn", "error"
	Text  string
}

// Result closes a Send: how the turn ended and what it cost.
type Result struct {
	Origin
	Subtype     string // "success", "error_max_turns", "error_during_execution"
	IsError     bool
	Text        string
	SessionID   string
	NumTurns    int
	Duration    time.Duration
	APIDuration time.Duration
	CostUSD     float64
	Usage       message.Usage
	StopReason  message.StopReason
	Denials     []PermissionDenied
	Cache       CacheStats
	// ModelUsage splits Usage and CostUSD by model, subagents and fork children included
	// (the Agent SDK's result.modelUsage). Keyed by the model id the provider reported.
	ModelUsage map[string]ModelUsage
	// StructuredOutput is the final answer as JSON matching the session's output schema
	// (--json-schema), when one was asked for and given.
	StructuredOutput json.RawMessage
	// UUID identifies the result line; empty means the renderer makes one up.
	UUID string
}

// ModelUsage is what one model was used for during a Send.
type ModelUsage struct {
	Usage message.Usage
	// CostUSD is the price of Usage; PriceKnown is false when the model has no known price,
	// and then CostUSD is 0 and must not be shown as a price.
	CostUSD    float64
	PriceKnown bool
	// ContextWindow and MaxOutputTokens are the model's limits, 0 when unknown.
	ContextWindow   int64
	MaxOutputTokens int64
}

// CacheStats totals prompt-cache behaviour over a Send.
type CacheStats struct {
	Hits           int            `json:"hits"`
	Misses         int            `json:"misses"`
	Breaks         int            `json:"breaks"`
	BreaksByReason map[string]int `json:"breaks_by_reason,omitempty"`
}

// TeammateState says a member of the session's team changed state: working, idle, stopped
// or dead. Origin names the teammate's agent.
type TeammateState struct {
	Origin
	Name  string
	Color string
	State string
	// Task is the board task the member holds, if any.
	Task string
}

// TeamMessage is a message between team members, for UIs (the model reads its own).
type TeamMessage struct {
	Origin
	ID string
	// Sender and Recipient are member names ("team-lead" for the lead).
	Sender    string
	Recipient string
	Type      string
	Summary   string
	Text      string
}

// TeamMessageRead says a member read a team message: it went into the recipient's next
// request, or the runtime consumed it (a permission answer, a shutdown). Telemetry measures
// mail latency from Sent to the event; UIs may leave it out.
type TeamMessageRead struct {
	Origin
	ID        string
	Sender    string
	Recipient string
	Type      string
	// Sent is when the message was sent, by the sending host's clock.
	Sent time.Time
}
