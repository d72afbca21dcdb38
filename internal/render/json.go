package render

import (
	"encoding/json"
	"io"
	"time"

	"github.com/google/uuid"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/message"
)

// jsonRenderer prints one result object at the end.
type jsonRenderer struct {
	w      io.Writer
	result *event.Result
}

func (r *jsonRenderer) Render(e event.Event) error {
	if res, ok := e.(event.Result); ok && res.Origin.AgentID == "" {
		r.result = &res
	}
	return nil
}

func (r *jsonRenderer) Finish() error {
	if r.result == nil {
		return nil
	}
	return writeLine(r.w, ResultLine(*r.result))
}

// streamJSON prints one line per message and system event.
type streamJSON struct {
	w         io.Writer
	sessionID string
}

func newStreamJSON(w io.Writer) *streamJSON { return &streamJSON{w: w} }

// usageJSON is the usage object of assistant messages and results.
type usageJSON struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
}

func usageOf(u message.Usage) usageJSON {
	return usageJSON{u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, u.OutputTokens}
}

type apiMessage struct {
	ID         string             `json:"id,omitempty"`
	Type       string             `json:"type,omitempty"`
	Role       message.Role       `json:"role"`
	Model      string             `json:"model,omitempty"`
	Content    []message.Block    `json:"content"`
	StopReason message.StopReason `json:"stop_reason,omitempty"`
	Usage      *usageJSON         `json:"usage,omitempty"`
}

func (r *streamJSON) Render(e event.Event) error {
	var line obj
	parent := func() any {
		if p := e.From().ParentToolUseID; p != "" {
			return p
		}
		return nil
	}
	switch e := e.(type) {
	case event.Init:
		r.sessionID = e.SessionID
		servers := e.MCPServers
		if servers == nil {
			servers = []event.MCPServerStatus{}
		}
		line = obj{{"type", "system"}, {"subtype", "init"}, {"cwd", e.Cwd}, {"session_id", e.SessionID}, {"tools", nonNil(e.Tools)}, {"mcp_servers", servers}, {"model", e.Model}, {"permissionMode", e.PermissionMode}, {"agents", nonNil(e.Agents)}, {"skills", nonNil(e.Skills)}, {"slash_commands", nonNil(e.Skills)}}
	case event.AssistantMessage:
		u := usageOf(e.Usage)
		line = obj{{"type", "assistant"}, {"message", apiMessage{ID: e.RequestID, Type: "message", Role: message.RoleAssistant,
			Model: e.Model, Content: e.Message.Content, StopReason: e.StopReason, Usage: &u}}, {"parent_tool_use_id", parent()}}
	case event.UserMessage:
		line = obj{{"type", "user"}, {"message", apiMessage{Role: message.RoleUser, Content: e.Message.Content}}, {"parent_tool_use_id", parent()}}
	case event.TaskStarted:
		line = obj{{"type", "system"}, {"subtype", "task_started"}, {"task_id", e.TaskID}, {"tool_use_id", e.ToolUseID}, {"description", e.Description}, {"subagent_type", e.SubagentType}, {"task_type", e.TaskType}, {"prompt", e.Prompt}}
	case event.TaskUpdated:
		line = obj{{"type", "system"}, {"subtype", "task_updated"}, {"task_id", e.TaskID}, {"patch", obj{{"status", e.Status}}}}
	case event.TaskNotification:
		line = obj{{"type", "system"}, {"subtype", "task_notification"}, {"task_id", e.TaskID}, {"tool_use_id", e.ToolUseID}, {"status", e.Status}, {"summary", e.Summary}}
	case event.CacheBreak:
		line = obj{{"type", "system"}, {"subtype", "cache_break"}, {"segment", e.Segment}, {"reason", e.Reason}, {"parent_tool_use_id", parent()}}
	case event.Compacted:
		line = obj{{"type", "system"}, {"subtype", "compact_boundary"}, {"compact_metadata", obj{{"trigger", e.Trigger}, {"pre_tokens", e.TokensBefore}}}}
	case event.Retry:
		line = obj{{"type", "system"}, {"subtype", "api_retry"}, {"attempt", e.Attempt}, {"retry_delay_ms", e.Delay.Milliseconds()}, {"error", e.Err}}
	case event.Notice:
		line = obj{{"type", "system"}, {"subtype", "notice"}, {"level", e.Level}, {"text", e.Text}}
	case event.TeammateState:
		line = obj{{"type", "system"}, {"subtype", "teammate_state"}, {"name", e.Name}, {"color", e.Color}, {"state", e.State}, {"task_id", e.Task}}
	case event.TeamMessage:
		line = obj{{"type", "system"}, {"subtype", "team_message"}, {"message_id", e.ID}, {"from", e.Sender}, {"to", e.Recipient},
			{"message_type", e.Type}, {"summary", e.Summary}, {"text", e.Text}}
	case event.Result:
		if e.Origin.AgentID != "" {
			return nil
		}
		return writeLine(r.w, ResultLine(e))
	default:
		return nil
	}
	// A teammate runs beside the lead, not inside a tool call: its lines name its agent.
	if o := e.From(); o.AgentID != "" && o.ParentToolUseID == "" {
		line = append(line, kv{"agent_id", o.AgentID}, kv{"agent_name", o.AgentName})
	}
	if r.sessionID != "" && !line.has("session_id") {
		line = append(line, kv{"session_id", r.sessionID})
	}
	line = append(line, kv{"uuid", uuid.NewString()})
	return writeLine(r.w, line)
}

func (r *streamJSON) Finish() error { return nil }

// ResultLine is the result object of json and stream-json output.
func ResultLine(e event.Result) obj {
	denials := make([]obj, 0, len(e.Denials))
	for _, d := range e.Denials {
		denials = append(denials, obj{{"tool_name", d.ToolName}, {"tool_use_id", d.ToolUseID}, {"tool_input", d.Input}, {"reason", d.Reason}})
	}
	cache := obj{{"hits", e.Cache.Hits}, {"misses", e.Cache.Misses}, {"breaks", e.Cache.Breaks}}
	if len(e.Cache.BreaksByReason) > 0 {
		cache = append(cache, kv{"breaks_by_reason", e.Cache.BreaksByReason}) // maps encode sorted
	}
	return obj{
		{"type", "result"}, {"subtype", e.Subtype}, {"is_error", e.IsError},
		{"duration_ms", e.Duration / time.Millisecond}, {"duration_api_ms", e.APIDuration / time.Millisecond},
		{"num_turns", e.NumTurns}, {"result", e.Text}, {"stop_reason", e.StopReason}, {"session_id", e.SessionID},
		{"total_cost_usd", e.CostUSD}, {"usage", usageOf(e.Usage)},
		{"permission_denials", denials}, {"cache", cache},
	}
}

// kv is one member of an obj.
type kv struct {
	k string
	v any
}

// obj is a JSON object that keeps its members in order, so lines read like Claude Code's
// ("type" first) and encode the same way every time.
type obj []kv

func (o obj) has(k string) bool {
	for _, m := range o {
		if m.k == k {
			return true
		}
	}
	return false
}

// MarshalJSON writes the members in order.
func (o obj) MarshalJSON() ([]byte, error) {
	buf := []byte{'{'}
	for i, m := range o {
		if i > 0 {
			buf = append(buf, ',')
		}
		k, _ := json.Marshal(m.k)
		v, err := json.Marshal(m.v)
		if err != nil {
			return nil, err
		}
		buf = append(append(append(buf, k...), ':'), v...)
	}
	return append(buf, '}'), nil
}

func writeLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
