package render

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/message"
)

var update = flag.Bool("update", false, "rewrite golden files")

// run is one run's events: a tool call, a cache break, a background task, the result.
func run() []event.Event {
	call := message.ToolUse("toolu_1", "Read", []byte(`{"file_path":"a.txt"}`))
	return []event.Event{
		event.Init{SessionID: "s-1", Model: "claude-sonnet-4-5", Cwd: "/work", Tools: []string{"Read", "Agent"}, PermissionMode: "default"},
		event.UserMessage{UUID: "u-1", Message: message.User(message.Text("read a.txt"))},
		event.TextDelta{Text: "Reading it."},
		event.AssistantMessage{Message: message.Assistant(message.Text("Reading it."), call), StopReason: message.StopToolUse,
			Usage: message.Usage{InputTokens: 10, CacheCreationInputTokens: 3000, OutputTokens: 12}, Model: "claude-sonnet-4-5", RequestID: "req_1"},
		event.ToolStart{ID: "toolu_1", Name: "Read", Input: []byte(`{"file_path":"a.txt"}`)},
		event.ToolEnd{ID: "toolu_1", Name: "Read", Result: []message.Block{message.Text("1\thello")}, Duration: 2 * time.Millisecond},
		event.UserMessage{UUID: "u-2", Message: message.User(message.ToolResult("toolu_1", []message.Block{message.Text("1\thello")}, false))},
		event.CacheBreak{Segment: "system", Reason: `section "env" changed`},
		event.TaskStarted{TaskID: "t-1", ToolUseID: "toolu_9", Description: "survey", SubagentType: "Explore", TaskType: "local_agent", Prompt: "survey"},
		event.TaskProgress{Origin: event.Origin{AgentID: "t-1", ParentToolUseID: "toolu_9"}, TaskID: "t-1", ToolUseID: "toolu_9", Description: "survey",
			SubagentType: "Explore", Usage: event.TaskUsage{TotalTokens: 4321, ToolUses: 3, Duration: 1250 * time.Millisecond}, LastToolName: "Grep"},
		event.TaskNotification{TaskID: "t-1", ToolUseID: "toolu_9", Status: "completed", Summary: "survey done",
			Usage: &event.TaskUsage{TotalTokens: 5000, ToolUses: 4, Duration: 2 * time.Second}},
		event.TextDelta{Origin: event.Origin{AgentID: "a-1", AgentName: "Explore"}, Text: "child text"},
		event.AssistantMessage{Message: message.Assistant(message.Text("It says hello.")), StopReason: message.StopEndTurn,
			Usage: message.Usage{CacheReadInputTokens: 3010, OutputTokens: 5}, Model: "claude-sonnet-4-5", RequestID: "req_2"},
		event.Result{Subtype: "success", Text: "It says hello.", SessionID: "s-1", NumTurns: 2, Duration: 1500 * time.Millisecond,
			APIDuration: time.Second, CostUSD: 0.0123, Usage: message.Usage{InputTokens: 10, CacheCreationInputTokens: 3000, CacheReadInputTokens: 3010, OutputTokens: 17},
			StopReason: message.StopEndTurn, Cache: event.CacheStats{Hits: 1, Misses: 1, Breaks: 1, BreaksByReason: map[string]int{"section changed": 1}}},
	}
}

// uuids are random per line; the goldens pin everything else.
var uuidRE = regexp.MustCompile(`"uuid":"[0-9a-f-]{36}"`)

func TestRenderersGolden(t *testing.T) {
	for _, format := range []string{"text", "json", "stream-json", "verbose"} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			f, verbose := format, false
			if format == "verbose" {
				f, verbose = "text", true
			}
			r, err := New(f, &buf, verbose)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range run() {
				if err := r.Render(e); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.Finish(); err != nil {
				t.Fatal(err)
			}
			got := uuidRE.ReplaceAllString(buf.String(), `"uuid":"UUID"`)
			path := filepath.Join("testdata", format+".golden")
			if *update {
				os.WriteFile(path, []byte(got), 0o644)
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("%s output mismatch (-want +got):\n%s", format, diff)
			}
		})
	}
}

func TestUnknownFormat(t *testing.T) {
	if _, err := New("yaml", &bytes.Buffer{}, false); err == nil || err.Error() != `output format "yaml" is not one of text, json, stream-json` {
		t.Errorf("err = %v", err)
	}
}

func TestStreamJSONTeammateLines(t *testing.T) {
	var buf bytes.Buffer
	r := NewStreamJSON(&buf, StreamOptions{})
	mate := event.Origin{AgentID: "a0123456789abcdef", AgentName: "alice"}
	for _, e := range []event.Event{
		event.TeammateState{Origin: mate, Name: "alice", Color: "blue", State: "idle", Task: "3"},
		event.TeamMessage{Origin: mate, ID: "m1", Sender: "alice", Recipient: "team-lead", Summary: "done", Text: "all done"},
		event.AssistantMessage{Origin: mate, Message: message.Message{Role: message.RoleAssistant, Content: []message.Block{message.Text("hi")}}},
		event.AssistantMessage{Origin: event.Origin{AgentID: "a1", ParentToolUseID: "toolu_1"}, Message: message.Message{Role: message.RoleAssistant}},
	} {
		if err := r.Render(e); err != nil {
			t.Fatal(err)
		}
	}
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	if lines[0]["subtype"] != "teammate_state" || lines[0]["state"] != "idle" || lines[0]["agent_id"] != mate.AgentID {
		t.Errorf("teammate_state line: %v", lines[0])
	}
	if lines[1]["subtype"] != "team_message" || lines[1]["from"] != "alice" || lines[1]["to"] != "team-lead" {
		t.Errorf("team_message line: %v", lines[1])
	}
	if lines[2]["type"] != "assistant" || lines[2]["agent_id"] != mate.AgentID || lines[2]["agent_name"] != "alice" {
		t.Errorf("a teammate's assistant line does not name its agent: %v", lines[2])
	}
	if _, ok := lines[3]["agent_id"]; ok {
		t.Errorf("a subagent's line (inside a tool call) changed shape: %v", lines[3])
	}
}

// TestStreamJSONStoppedTask: a task stopped with stop_task is "stopped" in its notification,
// the only word SDKTaskNotificationMessage has for it.
func TestStreamJSONStoppedTask(t *testing.T) {
	var buf bytes.Buffer
	r := NewStreamJSON(&buf, StreamOptions{})
	if err := r.Render(event.TaskNotification{TaskID: "t-1", Status: "killed", Summary: "Agent \"x\" killed"}); err != nil {
		t.Fatal(err)
	}
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	if line["status"] != "stopped" {
		t.Errorf("status = %v, want stopped", line["status"])
	}
}
