package render

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/event"
)

// ResultMessage is how a run that ended in an error reads to a person: what happened, in
// words; the result's subtype (error_during_execution…) is for machine output only.
func ResultMessage(res event.Result) string {
	text := strings.TrimSpace(res.Text)
	if strings.HasSuffix(text, context.Canceled.Error()) || strings.Contains(text, "interrupted by user") {
		return "Interrupted."
	}
	if text != "" {
		return text
	}
	switch res.Subtype {
	case "error_max_turns":
		return "Stopped at the turn limit."
	case "error_max_budget_usd":
		return "Stopped at the spending limit."
	case "error_max_structured_output_retries":
		return "The model gave no answer matching the output schema."
	}
	return "The run failed."
}

// DeniedSummary is the last thing a headless run whose calls were denied says: how many,
// and the exit status that tells a script so.
func DeniedSummary(n, status int) string {
	calls := "1 tool call was"
	if n != 1 {
		calls = fmt.Sprintf("%d tool calls were", n)
	}
	return fmt.Sprintf("%s denied, so the work may be incomplete (exit status %d); each denial names the rule that would allow the call", calls, status)
}

// RetryLine is the line a retried model request prints: "keel: retrying (attempt 3 of 10 in
// 7 s): connection refused to http://…".
func RetryLine(e event.Retry) string {
	attempt := fmt.Sprintf("attempt %d", e.Attempt+1)
	if e.MaxAttempts > 0 {
		attempt += fmt.Sprintf(" of %d", e.MaxAttempts)
	}
	return fmt.Sprintf("keel: %sretrying (%s in %s): %s", agentPrefix(e.Origin), attempt, waitText(e.Delay), firstLine(e.Err))
}

// DenialLine is the line a tool call denied in a run prints: "keel: denied Edit(calc.py): …
// to allow it, add …".
func DenialLine(e event.PermissionDenied) string {
	return fmt.Sprintf("keel: %sdenied %s: %s", agentPrefix(e.Origin), CallLabel(e.ToolName, e.Input, ""), e.Reason)
}

// CallLabel is a tool call as a person names it: Bash(go test ./...), Edit(calc.py).
func CallLabel(name string, input json.RawMessage, cwd string) string {
	if arg := KeyArg(name, input, cwd); arg != "" {
		return name + "(" + arg + ")"
	}
	return name
}

// KeyArg is the one argument that says what a tool call does: the command, the file (relative
// to cwd when inside it), the pattern, the address.
func KeyArg(name string, raw json.RawMessage, cwd string) string {
	var in map[string]any
	if json.Unmarshal(raw, &in) != nil {
		return ""
	}
	str := func(k string) string { s, _ := in[k].(string); return s }
	var s string
	switch name {
	case "Bash":
		s = str("command")
	case "Read", "Write", "Edit", "MultiEdit", "NotebookEdit":
		s = str("file_path")
		if rel, err := filepath.Rel(cwd, s); err == nil && cwd != "" && !strings.HasPrefix(rel, "..") {
			s = rel
		}
	case "Glob", "Grep":
		s = str("pattern")
	case "WebFetch":
		s = str("url")
	case "WebSearch":
		s = str("query")
	case "Task", "Agent":
		s = str("description")
	case "TodoWrite":
		if todos, ok := in["todos"].([]any); ok {
			s = fmt.Sprintf("%d items", len(todos))
		}
	default:
		for _, k := range []string{"command", "file_path", "path", "pattern", "url", "query", "description", "name"} {
			if s = str(k); s != "" {
				break
			}
		}
	}
	return strings.ReplaceAll(s, "\n", " ")
}

// waitText is a retry's wait as a person reads it: 500 ms, 7 s, 1 min 4 s.
func waitText(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Round(time.Second).Seconds()))
	}
	return fmt.Sprintf("%d min %d s", int(d.Minutes()), int(d.Seconds())%60)
}

// agentPrefix names the subagent or teammate a line is about, "" for the main agent.
func agentPrefix(o event.Origin) string {
	switch {
	case o.AgentName != "":
		return "[" + o.AgentName + "] "
	case o.AgentID != "":
		return "[agent " + o.AgentID + "] "
	}
	return ""
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
