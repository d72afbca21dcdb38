package render

import (
	"encoding/json"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/message"
)

// StreamOptions tune the stream-json renderer; the zero value prints what `-p
// --output-format stream-json` prints.
type StreamOptions struct {
	// IncludePartial adds stream_event lines: the model's reply as it streams, in the
	// Messages API's event shapes (--include-partial-messages).
	IncludePartial bool
	// ReplayUserMessages echoes each prompt back as a user line (--replay-user-messages);
	// without it only tool results are user lines, as in Claude Code.
	ReplayUserMessages bool
	// IncludeHookEvents adds hook_started and hook_response lines (--include-hook-events).
	IncludeHookEvents bool
	// Version is keel's version (the init line's claude_code_version); APIKeySource names
	// where the credentials came from (apiKeySource).
	Version      string
	APIKeySource string
}

// streamJSON prints one line per message and system event, in the shapes the Agent SDK's
// message types (SDKSystemMessage, SDKAssistantMessage, SDKResultMessage…) require. It is
// safe for concurrent use: a control protocol renders from several goroutines.
type streamJSON struct {
	w    io.Writer
	opts StreamOptions

	// mu guards the fields below.
	mu        sync.Mutex
	sessionID string
	model     string
	// partial is the reply streaming for each agent, by origin.
	partial map[event.Origin]*partialMessage
	prices  unpricedModels
}

// NewStreamJSON returns the stream-json renderer.
func NewStreamJSON(w io.Writer, opts StreamOptions) Renderer {
	return &streamJSON{w: w, opts: opts, partial: map[event.Origin]*partialMessage{}}
}

// usageLine is the usage of assistant messages and results, with the members the Agent
// SDK's NonNullableUsage requires.
type usageLine struct {
	InputTokens              int64          `json:"input_tokens"`
	CacheCreationInputTokens int64          `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64          `json:"cache_read_input_tokens"`
	OutputTokens             int64          `json:"output_tokens"`
	ServerToolUse            serverToolUse  `json:"server_tool_use"`
	ServiceTier              string         `json:"service_tier"`
	CacheCreation            *cacheCreation `json:"cache_creation,omitempty"`
}

type serverToolUse struct {
	WebSearchRequests int64 `json:"web_search_requests"`
	WebFetchRequests  int64 `json:"web_fetch_requests"`
}

type cacheCreation struct {
	Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
	Ephemeral5m int64 `json:"ephemeral_5m_input_tokens"`
}

func fullUsage(u message.Usage) usageLine {
	return usageLine{
		InputTokens: u.InputTokens, CacheCreationInputTokens: u.CacheCreationInputTokens,
		CacheReadInputTokens: u.CacheReadInputTokens, OutputTokens: u.OutputTokens, ServiceTier: "standard",
		ServerToolUse: serverToolUse{WebSearchRequests: u.WebSearchRequests},
		CacheCreation: &cacheCreation{Ephemeral1h: u.CacheCreation1hInputTokens, Ephemeral5m: u.CacheCreationInputTokens - u.CacheCreation1hInputTokens},
	}
}

type assistantMessage struct {
	ID           string             `json:"id"`
	Type         string             `json:"type"`
	Role         message.Role       `json:"role"`
	Model        string             `json:"model"`
	Content      []message.Block    `json:"content"`
	StopReason   message.StopReason `json:"stop_reason"`
	StopSequence *string            `json:"stop_sequence"`
	Usage        usageLine          `json:"usage"`
}

func (r *streamJSON) Render(e event.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.opts.IncludePartial {
		if err := r.renderPartial(e); err != nil {
			return err
		}
	}
	var line obj
	switch e := e.(type) {
	case event.Init:
		r.sessionID, r.model = e.SessionID, e.Model
		line = r.initLine(e)
	case event.AssistantMessage:
		if e.Model != "" && e.Origin.AgentID == "" {
			r.model = e.Model
		}
		line = obj{{"type", "assistant"}, {"message", assistantMessage{ID: e.RequestID, Type: "message", Role: message.RoleAssistant,
			Model: e.Model, Content: nonNilBlocks(e.Message.Content), StopReason: e.StopReason, Usage: fullUsage(e.Usage)}}, {"parent_tool_use_id", parentOf(e)}}
		if e.UUID != "" {
			line = append(line, kv{"session_id", r.sessionID}, kv{"uuid", e.UUID})
		}
	case event.UserMessage:
		if !hasToolResult(e.Message) && !r.opts.ReplayUserMessages {
			return nil
		}
		line = obj{{"type", "user"}, {"message", obj{{"role", message.RoleUser}, {"content", nonNilBlocks(e.Message.Content)}}}, {"parent_tool_use_id", parentOf(e)}}
		if !hasToolResult(e.Message) {
			line = append(line, kv{"isReplay", true})
		}
		if e.UUID != "" {
			line = append(line, kv{"session_id", r.sessionID}, kv{"uuid", e.UUID})
		}
	case event.HookStarted:
		if !r.opts.IncludeHookEvents {
			return nil
		}
		line = obj{{"type", "system"}, {"subtype", "hook_started"}, {"hook_id", e.HookID}, {"hook_name", e.Name}, {"hook_event", e.Event}}
	case event.HookResponse:
		if !r.opts.IncludeHookEvents {
			return nil
		}
		line = obj{{"type", "system"}, {"subtype", "hook_response"}, {"hook_id", e.HookID}, {"hook_name", e.Name}, {"hook_event", e.Event},
			{"output", e.Stdout}, {"stdout", e.Stdout}, {"stderr", e.Stderr}, {"exit_code", e.ExitCode}, {"outcome", e.Outcome}}
	case event.Result:
		if e.Origin.AgentID != "" {
			return nil
		}
		for _, n := range r.prices.notices(e) {
			if err := writeLine(r.w, obj{{"type", "system"}, {"subtype", "notice"}, {"level", n.Level}, {"text", n.Text},
				{"session_id", r.sessionID}, {"uuid", uuid.NewString()}}); err != nil {
				return err
			}
		}
		return writeLine(r.w, resultLine(e, r.model))
	default:
		var ok bool
		if line, ok = systemLine(e); !ok {
			return nil
		}
	}
	// A teammate runs beside the lead, not inside a tool call: its lines name its agent.
	if o := e.From(); o.AgentID != "" && o.ParentToolUseID == "" && !line.has("agent_id") {
		line = append(line, kv{"agent_id", o.AgentID}, kv{"agent_name", o.AgentName})
	}
	if !line.has("session_id") {
		line = append(line, kv{"session_id", r.sessionID})
	}
	if !line.has("uuid") {
		line = append(line, kv{"uuid", uuid.NewString()})
	}
	return writeLine(r.w, line)
}

// systemLine is the system line of an event that needs nothing but itself; false for an
// event that has none here.
func systemLine(e event.Event) (line obj, ok bool) {
	switch e := e.(type) {
	case event.PermissionDenied:
		line = obj{{"type", "system"}, {"subtype", "permission_denied"}, {"tool_name", e.ToolName}, {"tool_use_id", e.ToolUseID}, {"message", e.Reason}}
		if e.Origin.AgentID != "" {
			line = append(line, kv{"agent_id", e.Origin.AgentID})
		}
	case event.Status:
		line = obj{{"type", "system"}, {"subtype", "status"}, {"status", nil}, {"permissionMode", e.PermissionMode}}
	case event.TaskStarted:
		line = obj{{"type", "system"}, {"subtype", "task_started"}, {"task_id", e.TaskID}, {"tool_use_id", e.ToolUseID}, {"description", e.Description}, {"subagent_type", e.SubagentType}, {"task_type", e.TaskType}, {"prompt", e.Prompt}}
	case event.TaskUpdated:
		line = obj{{"type", "system"}, {"subtype", "task_updated"}, {"task_id", e.TaskID}, {"patch", obj{{"status", e.Status}}}}
	case event.TaskProgress:
		line = obj{{"type", "system"}, {"subtype", "task_progress"}, {"task_id", e.TaskID}, {"tool_use_id", e.ToolUseID}, {"description", e.Description},
			{"subagent_type", e.SubagentType}, {"usage", taskUsage(e.Usage)},
			{"last_tool_name", e.LastToolName}}
	case event.TaskNotification:
		line = obj{{"type", "system"}, {"subtype", "task_notification"}, {"task_id", e.TaskID}, {"tool_use_id", e.ToolUseID}, {"status", notificationStatus(e.Status)}, {"output_file", ""}, {"summary", e.Summary}}
		if e.Usage != nil {
			line = append(line, kv{"usage", taskUsage(*e.Usage)})
		}
	case event.CacheBreak:
		line = obj{{"type", "system"}, {"subtype", "cache_break"}, {"segment", e.Segment}, {"reason", e.Reason}, {"parent_tool_use_id", parentOf(e)}}
	case event.Compacted:
		line = obj{{"type", "system"}, {"subtype", "compact_boundary"}, {"compact_metadata", obj{{"trigger", e.Trigger}, {"pre_tokens", e.TokensBefore}}}}
	case event.Retry:
		line = obj{{"type", "system"}, {"subtype", "api_retry"}, {"attempt", e.Attempt}, {"max_retries", maxRetries}, {"retry_delay_ms", e.Delay.Milliseconds()}, {"error_status", nil}, {"error", retryError(e.Err)}, {"error_message", e.Err}}
	case event.Notice:
		line = obj{{"type", "system"}, {"subtype", "notice"}, {"level", e.Level}, {"text", e.Text}}
	case event.TeammateState:
		line = obj{{"type", "system"}, {"subtype", "teammate_state"}, {"name", e.Name}, {"color", e.Color}, {"state", e.State}, {"task_id", e.Task}}
	case event.TeamMessage:
		line = obj{{"type", "system"}, {"subtype", "team_message"}, {"message_id", e.ID}, {"from", e.Sender}, {"to", e.Recipient},
			{"message_type", e.Type}, {"summary", e.Summary}, {"text", e.Text}}
	default:
		return nil, false
	}
	return line, true
}

// taskUsage is the usage member of task_progress and task_notification lines.
func taskUsage(u event.TaskUsage) obj {
	return obj{{"total_tokens", u.TotalTokens}, {"tool_uses", u.ToolUses}, {"duration_ms", u.Duration.Milliseconds()}}
}

// notificationStatus is a finished task's status as SDKTaskNotificationMessage names it:
// completed, failed or stopped (keel's "killed").
func notificationStatus(s string) string {
	if s == "killed" {
		return "stopped"
	}
	return s
}

// maxRetries is the provider's retry budget (provider.WithRetries), for api_retry lines.
const maxRetries = 10

// retryError classifies a retried failure in the SDK's SDKAssistantMessageError terms.
func retryError(msg string) string {
	for _, c := range []struct{ needle, kind string }{
		{"429", "rate_limit"}, {"rate_limit", "rate_limit"}, {"529", "overloaded"}, {"overloaded", "overloaded"},
		{"401", "authentication_failed"}, {"500", "server_error"}, {"502", "server_error"}, {"503", "server_error"},
	} {
		if strings.Contains(msg, c.needle) {
			return c.kind
		}
	}
	return "unknown"
}

func (r *streamJSON) initLine(e event.Init) obj {
	servers := make([]obj, 0, len(e.MCPServers))
	for _, s := range e.MCPServers {
		server := obj{{"name", s.Name}, {"status", s.Status}}
		if s.Source != "" {
			server = append(server, kv{"source", s.Source})
		}
		servers = append(servers, server)
	}
	plugins := e.Plugins
	if plugins == nil {
		plugins = []event.PluginInfo{}
	}
	line := obj{{"type", "system"}, {"subtype", "init"}, {"cwd", e.Cwd}, {"session_id", e.SessionID}, {"tools", nonNil(e.Tools)},
		{"mcp_servers", servers}, {"model", e.Model}, {"permissionMode", e.PermissionMode},
		{"slash_commands", nonNil(e.Skills)}, {"apiKeySource", orNone(r.opts.APIKeySource)},
		{"claude_code_version", r.opts.Version}, {"output_style", "default"},
		{"agents", nonNil(e.Agents)}, {"skills", nonNil(e.Skills)}, {"plugins", plugins}}
	if len(e.PluginErrors) > 0 {
		line = append(line, kv{"plugin_errors", e.PluginErrors})
	}
	return line
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func parentOf(e event.Event) any {
	if p := e.From().ParentToolUseID; p != "" {
		return p
	}
	return nil
}

func hasToolResult(m message.Message) bool {
	for _, b := range m.Content {
		if b.Type == message.TypeToolResult {
			return true
		}
	}
	return false
}

func nonNilBlocks(b []message.Block) []message.Block {
	if b == nil {
		return []message.Block{}
	}
	return b
}

func (r *streamJSON) Finish() error { return nil }

// resultLine is the result line of stream-json, with model as the entry of modelUsage when
// the session reported no per-model split.
func resultLine(e event.Result, model string) obj {
	line := ResultLine(e)
	usage := e.ModelUsage
	if len(usage) == 0 && model != "" {
		usage = map[string]event.ModelUsage{model: {Usage: e.Usage, CostUSD: e.CostUSD, PriceKnown: true}}
	}
	return line.set("modelUsage", modelUsageLine(usage))
}

type modelUsageEntry struct {
	InputTokens              int64   `json:"inputTokens"`
	OutputTokens             int64   `json:"outputTokens"`
	CacheReadInputTokens     int64   `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int64   `json:"cacheCreationInputTokens"`
	WebSearchRequests        int64   `json:"webSearchRequests"`
	CostUSD                  float64 `json:"costUSD"`
	ContextWindow            int64   `json:"contextWindow"`
	MaxOutputTokens          int64   `json:"maxOutputTokens"`
	CostBasis                string  `json:"costBasis,omitempty"`
}

func modelUsageLine(m map[string]event.ModelUsage) map[string]modelUsageEntry {
	out := make(map[string]modelUsageEntry, len(m))
	for model, u := range m {
		basis := "list"
		if !u.PriceKnown {
			basis = "unknown"
		}
		out[model] = modelUsageEntry{
			InputTokens: u.Usage.InputTokens, OutputTokens: u.Usage.OutputTokens, CacheReadInputTokens: u.Usage.CacheReadInputTokens,
			CacheCreationInputTokens: u.Usage.CacheCreationInputTokens, WebSearchRequests: u.Usage.WebSearchRequests, CostUSD: u.CostUSD, ContextWindow: u.ContextWindow,
			MaxOutputTokens: u.MaxOutputTokens, CostBasis: basis,
		}
	}
	return out
}

// partialMessage tracks the stream_event lines of one reply in progress.
type partialMessage struct {
	started bool
	index   int
	// open is the type of the content block being streamed, "" when none; a tool call's
	// block is "tool_use " and its id.
	open string
	at   time.Time
	// streamed are the tool calls whose blocks streamed, by id: the complete message does
	// not repeat them.
	streamed map[string]bool
}

// renderPartial writes the stream_event lines an event implies: message_start and block
// starts on the first delta, deltas as they come, and on the complete message the blocks
// that did not stream (tool calls), block stops, message_delta and message_stop.
func (r *streamJSON) renderPartial(e event.Event) error {
	o := e.From()
	p := r.partial[o]
	if p == nil {
		p = &partialMessage{}
		r.partial[o] = p
	}
	switch e := e.(type) {
	case event.TextDelta:
		return r.delta(o, p, message.TypeText, obj{{"type", "text_delta"}, {"text", e.Text}})
	case event.ThinkingDelta:
		return r.delta(o, p, message.TypeThinking, obj{{"type", "thinking_delta"}, {"thinking", e.Thinking}})
	case event.ToolInputDelta:
		return r.toolDelta(o, p, e)
	case event.Retry:
		// The failed attempt's partial output is void; the retry starts a new message.
		delete(r.partial, o)
	case event.AssistantMessage:
		defer delete(r.partial, o)
		if err := r.start(o, p); err != nil {
			return err
		}
		if p.open != "" {
			if err := r.stopBlock(o, p); err != nil {
				return err
			}
		}
		for _, b := range e.Message.Content {
			if b.Type != message.TypeToolUse || p.streamed[b.ID] {
				continue
			}
			input := b.Input
			if len(input) == 0 {
				input = json.RawMessage("{}")
			}
			if err := r.event(o, obj{{"type", "content_block_start"}, {"index", p.index}, {"content_block", obj{{"type", "tool_use"}, {"id", b.ID}, {"name", b.Name}, {"input", obj{}}}}}); err != nil {
				return err
			}
			if err := r.event(o, obj{{"type", "content_block_delta"}, {"index", p.index}, {"delta", obj{{"type", "input_json_delta"}, {"partial_json", string(input)}}}}); err != nil {
				return err
			}
			p.open = message.TypeToolUse
			if err := r.stopBlock(o, p); err != nil {
				return err
			}
		}
		if err := r.event(o, obj{{"type", "message_delta"}, {"delta", obj{{"stop_reason", e.StopReason}, {"stop_sequence", nil}}}, {"usage", obj{{"output_tokens", e.Usage.OutputTokens}}}}); err != nil {
			return err
		}
		return r.event(o, obj{{"type", "message_stop"}})
	}
	return nil
}

func (r *streamJSON) start(o event.Origin, p *partialMessage) error {
	if p.started {
		return nil
	}
	p.started, p.at = true, time.Now()
	return r.event(o, obj{{"type", "message_start"}, {"message", obj{{"type", "message"}, {"role", "assistant"}, {"model", r.model},
		{"content", []any{}}, {"stop_reason", nil}, {"stop_sequence", nil}, {"usage", fullUsage(message.Usage{})}}}})
}

func (r *streamJSON) delta(o event.Origin, p *partialMessage, blockType string, delta obj) error {
	if err := r.start(o, p); err != nil {
		return err
	}
	if p.open != blockType {
		if p.open != "" {
			if err := r.stopBlock(o, p); err != nil {
				return err
			}
		}
		block := obj{{"type", blockType}, {blockType, ""}}
		if blockType == message.TypeThinking {
			block = append(block, kv{"signature", ""})
		}
		if err := r.event(o, obj{{"type", "content_block_start"}, {"index", p.index}, {"content_block", block}}); err != nil {
			return err
		}
		p.open = blockType
	}
	return r.event(o, obj{{"type", "content_block_delta"}, {"index", p.index}, {"delta", delta}})
}

// toolDelta streams a tool call's input as the model sends it: its block opens on the first
// fragment, and each fragment is an input_json_delta.
func (r *streamJSON) toolDelta(o event.Origin, p *partialMessage, e event.ToolInputDelta) error {
	open := message.TypeToolUse + " " + e.ID
	if e.Start {
		if err := r.start(o, p); err != nil {
			return err
		}
		if p.open != "" {
			if err := r.stopBlock(o, p); err != nil {
				return err
			}
		}
		if p.streamed == nil {
			p.streamed = map[string]bool{}
		}
		p.streamed[e.ID], p.open = true, open
		return r.event(o, obj{{"type", "content_block_start"}, {"index", p.index}, {"content_block", obj{{"type", "tool_use"}, {"id", e.ID}, {"name", e.Name}, {"input", obj{}}}}})
	}
	if p.open != open {
		return nil // a fragment of a call whose start was not seen
	}
	return r.event(o, obj{{"type", "content_block_delta"}, {"index", p.index}, {"delta", obj{{"type", "input_json_delta"}, {"partial_json", e.PartialJSON}}}})
}

func (r *streamJSON) stopBlock(o event.Origin, p *partialMessage) error {
	err := r.event(o, obj{{"type", "content_block_stop"}, {"index", p.index}})
	p.index++
	p.open = ""
	return err
}

func (r *streamJSON) event(o event.Origin, ev obj) error {
	var parent any
	if o.ParentToolUseID != "" {
		parent = o.ParentToolUseID
	}
	return writeLine(r.w, obj{{"type", "stream_event"}, {"event", ev}, {"session_id", r.sessionID}, {"parent_tool_use_id", parent}, {"uuid", uuid.NewString()}})
}
