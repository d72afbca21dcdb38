package otelexport_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/telemetry"
	"github.com/keel-dev/keel/internal/telemetry/oteltest"
)

// The metrics TestRecorderExportsClaudeCodeNames does not reach, each from the events that
// drive it: lines of code and edit decisions from Edit and Write, pull requests from Bash,
// active time from the result; keel's cache read share, compactions, messages and background
// deliveries; and the api_error event of a retry.
func TestRecorderMetricsFromEvents(t *testing.T) {
	recv := oteltest.Start(t)
	at := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	lines := []telemetry.Line{{At: at, Session: &telemetry.SessionInfo{SessionID: "s-1", Version: "1.2.3", StartType: "fresh"}},
		{At: at, Prompt: &telemetry.Prompt{ID: "p-1", Length: 2, TraceID: telemetry.NewTraceID(), SpanID: telemetry.NewSpanID()}}}
	add := func(e event.Event) {
		at = at.Add(100 * time.Millisecond)
		data, err := event.Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, telemetry.Line{At: at, Event: data})
	}
	call := func(id, name, input string) {
		add(event.ToolStart{ID: id, Name: name, Input: json.RawMessage(input)})
		add(event.ToolEnd{ID: id, Name: name, Result: []message.Block{message.Text("ok")}})
	}
	add(event.Retry{Attempt: 1, Err: "overloaded"})
	add(event.AssistantMessage{Model: model, RequestID: "req_1", StopReason: "tool_use",
		Usage: message.Usage{InputTokens: 100, CacheReadInputTokens: 300}})
	call("e1", "Edit", `{"file_path":"/w/main.go","old_string":"a\nb","new_string":"a\nb\nc"}`)
	call("w1", "Write", `{"file_path":"/w/app.py","content":"x\ny\n"}`)
	call("b1", "Bash", `{"command":"gh pr create --fill"}`)
	add(event.Compacted{Trigger: "auto", TokensBefore: 1000})
	add(event.TeamMessage{ID: "m1", Sender: "alice", Recipient: "team-lead", Type: "shutdown_response"})
	add(event.TeamMessage{ID: "m2", Sender: "team-lead", Recipient: "alice"})
	add(event.TaskNotification{TaskID: "bg-1", Status: "completed"})
	add(event.Result{Subtype: "success", Duration: 90 * time.Second})
	record(t, config(t, "grpc", recv.GRPCEndpoint(), false), lines)
	d := recv.Data()
	for _, c := range []struct {
		name  string
		match map[string]string
		want  float64
	}{
		{"claude_code.lines_of_code.count", map[string]string{"type": "added"}, 3 + 2},
		{"claude_code.lines_of_code.count", map[string]string{"type": "removed"}, 2},
		{"claude_code.code_edit_tool.decision", map[string]string{"tool_name": "Edit", "decision": "accept", "language": "Go"}, 1},
		{"claude_code.code_edit_tool.decision", map[string]string{"tool_name": "Write", "language": "Python"}, 1},
		{"claude_code.pull_request.count", nil, 1},
		{"claude_code.active_time.total", map[string]string{"type": "cli"}, 90},
		{"keel.cache.read_share", nil, 0.75},
		{"keel.compaction.count", map[string]string{"trigger": "auto"}, 1},
		{"keel.team.message.count", map[string]string{"type": "shutdown_response"}, 1},
		{"keel.team.message.count", map[string]string{"type": "message"}, 1},
		{"keel.background.delivery.count", map[string]string{"status": "completed"}, 1},
	} {
		if got := d.Sum(c.name, c.match); got != c.want {
			t.Errorf("%s %v = %v, want %v", c.name, c.match, got, c.want)
		}
	}
	errs := d.Events("claude_code.api_error")
	if len(errs) != 1 || errs[0].Attrs["error"] != "overloaded" || errs[0].Attrs["attempt"] != "1" {
		t.Errorf("api_error events %+v, want one for the retry", errs)
	}
}
