package render

import (
	"encoding/json"
	"io"
	"maps"
	"slices"
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
	var line map[string]any
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
		line = map[string]any{"type": "system", "subtype": "init", "cwd": e.Cwd, "session_id": e.SessionID,
			"tools": nonNil(e.Tools), "mcp_servers": servers, "model": e.Model, "permissionMode": e.PermissionMode,
			"agents": nonNil(e.Agents), "skills": nonNil(e.Skills), "slash_commands": nonNil(e.Skills)}
	case event.AssistantMessage:
		u := usageOf(e.Usage)
		line = map[string]any{"type": "assistant", "message": apiMessage{ID: e.RequestID, Type: "message", Role: message.RoleAssistant,
			Model: e.Model, Content: e.Message.Content, StopReason: e.StopReason, Usage: &u}, "parent_tool_use_id": parent()}
	case event.UserMessage:
		line = map[string]any{"type": "user", "message": apiMessage{Role: message.RoleUser, Content: e.Message.Content}, "parent_tool_use_id": parent()}
	case event.TaskStarted:
		line = map[string]any{"type": "system", "subtype": "task_started", "task_id": e.TaskID, "tool_use_id": e.ToolUseID,
			"description": e.Description, "subagent_type": e.SubagentType, "task_type": e.TaskType, "prompt": e.Prompt}
	case event.TaskUpdated:
		line = map[string]any{"type": "system", "subtype": "task_updated", "task_id": e.TaskID, "patch": map[string]any{"status": e.Status}}
	case event.TaskNotification:
		line = map[string]any{"type": "system", "subtype": "task_notification", "task_id": e.TaskID, "tool_use_id": e.ToolUseID,
			"status": e.Status, "summary": e.Summary}
	case event.CacheBreak:
		line = map[string]any{"type": "system", "subtype": "cache_break", "segment": e.Segment, "reason": e.Reason, "parent_tool_use_id": parent()}
	case event.Compacted:
		line = map[string]any{"type": "system", "subtype": "compact_boundary", "compact_metadata": map[string]any{"trigger": e.Trigger, "pre_tokens": e.TokensBefore}}
	case event.Retry:
		line = map[string]any{"type": "system", "subtype": "api_retry", "attempt": e.Attempt, "retry_delay_ms": e.Delay.Milliseconds(), "error": e.Err}
	case event.Notice:
		line = map[string]any{"type": "system", "subtype": "notice", "level": e.Level, "text": e.Text}
	case event.Result:
		if e.Origin.AgentID != "" {
			return nil
		}
		return writeLine(r.w, ResultLine(e))
	default:
		return nil
	}
	if r.sessionID != "" {
		line["session_id"] = r.sessionID
	}
	line["uuid"] = uuid.NewString()
	return writeLine(r.w, line)
}

func (r *streamJSON) Finish() error { return nil }

// ResultLine is the result object of json and stream-json output.
func ResultLine(e event.Result) map[string]any {
	denials := make([]map[string]any, 0, len(e.Denials))
	for _, d := range e.Denials {
		denials = append(denials, map[string]any{"tool_name": d.ToolName, "tool_use_id": d.ToolUseID, "tool_input": d.Input, "reason": d.Reason})
	}
	cache := map[string]any{"hits": e.Cache.Hits, "misses": e.Cache.Misses, "breaks": e.Cache.Breaks}
	if len(e.Cache.BreaksByReason) > 0 {
		reasons := map[string]int{}
		for _, k := range slices.Sorted(maps.Keys(e.Cache.BreaksByReason)) {
			reasons[k] = e.Cache.BreaksByReason[k]
		}
		cache["breaks_by_reason"] = reasons
	}
	return map[string]any{
		"type": "result", "subtype": e.Subtype, "is_error": e.IsError, "result": e.Text,
		"session_id": e.SessionID, "num_turns": e.NumTurns,
		"duration_ms": e.Duration / time.Millisecond, "duration_api_ms": e.APIDuration / time.Millisecond,
		"total_cost_usd": e.CostUSD, "usage": usageOf(e.Usage), "stop_reason": e.StopReason,
		"permission_denials": denials, "cache": cache,
	}
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
