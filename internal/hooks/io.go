package hooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Input is the event description a hook reads on stdin, with Claude Code's field names. Fields
// an event does not use stay empty and are left out.
type Input struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	PermissionMode string `json:"permission_mode,omitempty"`

	ToolName     string          `json:"tool_name,omitempty"`
	ToolInput    json.RawMessage `json:"tool_input,omitempty"`
	ToolResponse json.RawMessage `json:"tool_response,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`

	Prompt string `json:"prompt,omitempty"`
	// StopHookActive is true when the stop being checked was itself caused by a Stop hook, so
	// a hook can avoid keeping the session going forever. Always sent for Stop events.
	StopHookActive bool `json:"stop_hook_active,omitempty"`

	Source             string `json:"source,omitempty"`  // SessionStart: startup, resume, clear, compact
	Reason             string `json:"reason,omitempty"`  // SessionEnd
	Trigger            string `json:"trigger,omitempty"` // PreCompact: manual, auto
	CustomInstructions string `json:"custom_instructions,omitempty"`
	Message            string `json:"message,omitempty"` // Notification
	NotificationType   string `json:"notification_type,omitempty"`
	AgentID            string `json:"agent_id,omitempty"`
	AgentType          string `json:"agent_type,omitempty"`
	TeammateName       string `json:"teammate_name,omitempty"`
	TeamName           string `json:"team_name,omitempty"`
	WorktreePath       string `json:"worktree_path,omitempty"`

	// Elicitation and ElicitationResult: the MCP server's question, and for the latter the
	// answer given.
	MCPServerName   string          `json:"mcp_server_name,omitempty"`
	Mode            string          `json:"mode,omitempty"` // form or url
	URL             string          `json:"url,omitempty"`
	ElicitationID   string          `json:"elicitation_id,omitempty"`
	RequestedSchema json.RawMessage `json:"requested_schema,omitempty"`
	Action          string          `json:"action,omitempty"`
	Content         json.RawMessage `json:"content,omitempty"`

	// Extra fields, added unless a field above already has the name.
	Extra map[string]any `json:"-"`
}

// encode renders in for event ev.
func (in Input) encode(ev Event) ([]byte, error) {
	data, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("encode hook input: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("encode hook input: %w", err)
	}
	m["hook_event_name"] = ev
	if eventTable.Get()[ev].stopHook {
		m["stop_hook_active"] = in.StopHookActive
	}
	for k, v := range in.Extra {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
	return json.Marshal(m)
}

// Decision is a hook's verdict, ordered from least to most restrictive.
type Decision int

// Decisions.
const (
	DecisionNone  Decision = iota // no opinion: proceed as the permission rules say
	DecisionAllow                 // allow the tool call without asking
	DecisionAsk                   // ask the user
	DecisionBlock                 // block the call or prompt; for Stop, keep the loop going
)

func (d Decision) String() string {
	return [...]string{"none", "allow", "ask", "block"}[d]
}

// output is the JSON a hook may print on stdout.
type output struct {
	Continue           *bool           `json:"continue"`
	StopReason         string          `json:"stopReason"`
	SuppressOutput     bool            `json:"suppressOutput"`
	SystemMessage      string          `json:"systemMessage"`
	Decision           string          `json:"decision"`
	Reason             string          `json:"reason"`
	UpdatedInput       json.RawMessage `json:"updatedInput"`
	AdditionalContext  string          `json:"additionalContext"`
	HookSpecificOutput *specificOutput `json:"hookSpecificOutput"`
}

// specificOutput is the event-specific part of a hook's output (hookSpecificOutput).
type specificOutput struct {
	PermissionDecision       string          `json:"permissionDecision"`
	PermissionDecisionReason string          `json:"permissionDecisionReason"`
	UpdatedInput             json.RawMessage `json:"updatedInput"`
	AdditionalContext        string          `json:"additionalContext"`
	// Elicitation and ElicitationResult: the answer for the MCP server.
	Action  string          `json:"action"`
	Content json.RawMessage `json:"content"`
	// Decision is PermissionRequest's answer to the permission question.
	Decision *struct {
		Behavior           string          `json:"behavior"`
		UpdatedInput       json.RawMessage `json:"updatedInput"`
		UpdatedPermissions json.RawMessage `json:"updatedPermissions"`
		Message            string          `json:"message"`
		Interrupt          bool            `json:"interrupt"`
	} `json:"decision"`
	// Retry is PermissionDenied's: tell the model it may try the call again.
	Retry bool `json:"retry"`
	// DisplayContent is MessageDisplay's: the text to show instead of the message's.
	DisplayContent *string `json:"displayContent"`
	// WatchPaths (SessionStart, CwdChanged, FileChanged) are files to watch: a change
	// to one fires FileChanged.
	WatchPaths []string `json:"watchPaths"`
}

// interpret fills r's verdict from its exit code and output, for event ev.
func (r *Result) interpret(ev Event) {
	spec := eventTable.Get()[ev]
	switch {
	case r.Err != nil:
		return
	case r.ExitCode == 2 && spec.canBlock:
		r.Decision = DecisionBlock
		r.Reason = strings.TrimSpace(r.Stderr)
		return
	case r.ExitCode != 0:
		r.Warning = fmt.Sprintf("exit status %d (not blocking)", r.ExitCode)
		return
	}
	text := bytes.TrimSpace([]byte(r.Stdout))
	if len(text) == 0 {
		return
	}
	var out output
	if text[0] != '{' {
		if spec.stdoutIsContext {
			r.AdditionalContext = string(text)
		}
		return
	}
	if err := json.Unmarshal(text, &out); err != nil {
		r.Warning = fmt.Sprintf("stdout is not valid JSON (%v); treated as text", err)
		if spec.stdoutIsContext {
			r.AdditionalContext = string(text)
		}
		return
	}
	if out.Continue != nil && !*out.Continue {
		r.StopSession = true
		r.StopReason = out.StopReason
	}
	r.SuppressOutput = out.SuppressOutput
	r.SystemMessage = out.SystemMessage
	r.Reason = out.Reason
	r.UpdatedInput = out.UpdatedInput
	r.AdditionalContext = out.AdditionalContext
	switch out.Decision {
	case "":
	case "block":
		if spec.canBlock {
			r.Decision = DecisionBlock
		} else {
			r.Warning = fmt.Sprintf(`decision "block" has no effect on %s`, ev)
		}
	case "approve":
		r.Decision = DecisionAllow
	default:
		r.Warning = fmt.Sprintf(`decision %q is not one of block, approve; ignored`, out.Decision)
	}
	if h := out.HookSpecificOutput; h != nil {
		r.interpretSpecific(ev, h)
	}
}

// interpretSpecific fills r from the event-specific part of a hook's JSON output
// (hookSpecificOutput): permission decisions, input and context, elicitation answers.
func (r *Result) interpretSpecific(ev Event, h *specificOutput) {
	switch h.PermissionDecision {
	case "", "defer":
	case "allow":
		r.Decision = max(r.Decision, DecisionAllow)
	case "ask":
		r.Decision = max(r.Decision, DecisionAsk)
	case "deny":
		r.Decision = DecisionBlock
	default:
		r.Warning = fmt.Sprintf(`permissionDecision %q is not one of allow, deny, ask; ignored`, h.PermissionDecision)
	}
	if h.PermissionDecisionReason != "" {
		r.Reason = h.PermissionDecisionReason
	}
	if h.UpdatedInput != nil {
		r.UpdatedInput = h.UpdatedInput
	}
	if h.AdditionalContext != "" {
		r.AdditionalContext = h.AdditionalContext
	}
	switch h.Action {
	case "":
	case "accept", "decline", "cancel":
		if ev == Elicitation || ev == ElicitationResult {
			r.Action, r.Content = h.Action, h.Content
		} else {
			r.Warning = fmt.Sprintf("action %q has no effect on %s", h.Action, ev)
		}
	default:
		r.Warning = fmt.Sprintf(`action %q is not one of accept, decline, cancel; ignored`, h.Action)
	}
	r.Retry = h.Retry
	r.DisplayContent = h.DisplayContent
	r.WatchPaths = h.WatchPaths
	if d := h.Decision; d != nil {
		switch d.Behavior {
		case "allow":
			r.Decision = max(r.Decision, DecisionAllow)
			if d.UpdatedInput != nil {
				r.UpdatedInput = d.UpdatedInput
			}
			r.UpdatedPermissions = d.UpdatedPermissions
		case "deny":
			r.Decision = DecisionBlock
			r.Reason = d.Message
			r.Interrupt = d.Interrupt
		default:
			r.Warning = fmt.Sprintf(`decision.behavior %q is not one of allow, deny; ignored`, d.Behavior)
		}
	}
}
