package keel

import (
	"encoding/json"
	"time"
)

// Event is one thing that happened in a session; switch on the concrete types below. Every
// event carries an [Origin]: which agent produced it (empty for the main agent).
type Event interface{ From() Origin }

// Origin says which agent an event belongs to, and the tool_use id of the Agent call that
// started that agent, so a UI can nest a subagent's output under the call.
type Origin struct {
	AgentID         string `json:"agent_id,omitempty"`
	AgentName       string `json:"agent_name,omitempty"`
	ParentToolUseID string `json:"parent_tool_use_id,omitempty"`
}

// From returns the origin itself; every event embeds one.
func (o Origin) From() Origin { return o }

// Init opens every [Session.Send]: the session as this prompt finds it.
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
	// Plugins are the loaded plugins; PluginErrors what went wrong loading them.
	Plugins      []PluginInfo
	PluginErrors []PluginError
}

// MCPServerStatus is one configured MCP server as the session sees it.
type MCPServerStatus struct {
	Name string `json:"name"`
	// Status is connected, failed, needs-auth, pending or disabled; Reason says why a
	// server failed.
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	// Tools is how many tools it offers.
	Tools int `json:"tools,omitempty"`
	// Source is the configuration scope it came from when that is a plugin ("plugin").
	Source string `json:"source,omitempty"`
}

// PluginInfo is one loaded plugin.
type PluginInfo struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Version string `json:"version,omitempty"`
	// Source is name@marketplace (name@inline for a folder given by path).
	Source string `json:"source"`
}

// PluginError is one problem loading a plugin: which plugin, what kind of problem, what went
// wrong and the file it is in.
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

// ToolInputDelta is a fragment of a tool call's JSON input, as the model streams it. ID and
// Name name the call on every fragment; Start marks its first. The whole input arrives with
// the [AssistantMessage].
type ToolInputDelta struct {
	Origin
	ID, Name    string
	Start       bool
	PartialJSON string
}

// ThinkingDelta is streamed thinking text.
type ThinkingDelta struct {
	Origin
	Thinking string
}

// AssistantMessage is a complete assistant message, after its stream ended.
type AssistantMessage struct {
	Origin
	// UUID is the message's entry in the transcript.
	UUID       string
	Message    Message
	StopReason StopReason
	Usage      Usage
	Model      string
	RequestID  string
}

// UserMessage is a user message that joined the history: the prompt, or tool results.
type UserMessage struct {
	Origin
	UUID    string
	Message Message
}

// ToolStart says a tool call is about to run (permission was granted).
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
	Result   []Block
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

// Retry says a model request failed and is tried again; partial text shown for the failed
// attempt is void.
type Retry struct {
	Origin
	// Attempt counts from 0; MaxAttempts is how many attempts there will be at most (0:
	// unknown).
	Attempt     int
	MaxAttempts int
	Delay       time.Duration
	Err         string
}

// CacheBreak says a request's prefix changed where the prompt cache was expected to hit:
// Segment names where ("tools", "system", "messages[12]", "model"), Reason what changed.
type CacheBreak struct {
	Origin
	Segment string
	Reason  string
}

// Compacted says the history was summarised and the conversation continues from the summary.
type Compacted struct {
	Origin
	// Trigger is "auto" (the context filled) or "manual" ([Session.Compact]).
	Trigger      string
	TokensBefore int64
}

// Todos is the agent's todo list after a TodoWrite.
type Todos struct {
	Origin
	Items []Todo
}

// Todo is one item of the todo list.
type Todo struct {
	Content    string `json:"content"`
	Status     string `json:"status"`
	ActiveForm string `json:"activeForm"`
}

// TaskStarted says a subagent or background task began.
type TaskStarted struct {
	Origin
	TaskID       string
	ToolUseID    string
	Description  string
	SubagentType string
	TaskType     string
	Prompt       string
}

// TaskUpdated reports a task's status change.
type TaskUpdated struct {
	Origin
	TaskID string
	Status string
}

// TaskProgress reports a subagent task's work so far, after each of its replies that calls
// tools.
type TaskProgress struct {
	Origin
	TaskID       string
	ToolUseID    string
	Description  string
	SubagentType string
	Usage        TaskUsage
	LastToolName string
}

// TaskUsage is what an agent task used: TotalTokens counts every token of its requests.
type TaskUsage struct {
	TotalTokens int64
	ToolUses    int
	Duration    time.Duration
}

// TaskNotification says a background task ended and its result is queued for its parent.
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

// Status reports a change of the session's state a controlling program shows: the
// permission mode after a switch.
type Status struct {
	Origin
	PermissionMode string
}

// HookStarted says a hook began running for an event; [HookResponse] says how it ended.
// HookID pairs the two.
type HookStarted struct {
	Origin
	HookID string
	Name   string
	Event  string
}

// HookResponse is a hook's end: its output and how it went (success, error or cancelled).
type HookResponse struct {
	Origin
	HookID   string
	Name     string
	Event    string
	Stdout   string
	Stderr   string
	ExitCode int
	Outcome  string
}

// Notice is something the user should read that is not part of the conversation: a
// configuration warning, an MCP server lost, a hook's output. Level is info, warn or error.
type Notice struct {
	Origin
	Level string
	Text  string
}

// Result closes a [Session.Send]: how the turn ended and what it cost.
type Result struct {
	Origin
	// Subtype is success, error_max_turns, error_max_budget_usd,
	// error_max_structured_output_retries or error_during_execution.
	Subtype     string
	IsError     bool
	Text        string
	SessionID   string
	NumTurns    int
	Duration    time.Duration
	APIDuration time.Duration
	CostUSD     float64
	Usage       Usage
	StopReason  StopReason
	Denials     []PermissionDenied
	Cache       CacheStats
	// ModelUsage splits Usage and CostUSD by model, subagents and fork children included.
	ModelUsage map[string]ModelUsage
	// StructuredOutput is the final answer as JSON matching the session's output schema,
	// when one was asked for and given.
	StructuredOutput json.RawMessage
	// UUID identifies the result.
	UUID string
}

// ModelUsage is what one model was used for during a Send.
type ModelUsage struct {
	Usage Usage
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

// TeamMessage is a message between team members, for UIs.
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
// request, or keel consumed it (a permission answer, a shutdown). Sent is when it was sent,
// so Sent to now is how long the message waited.
type TeamMessageRead struct {
	Origin
	ID        string
	Sender    string
	Recipient string
	Type      string
	Sent      time.Time
}
