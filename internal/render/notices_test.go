package render

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/event"
)

// TestNoticesReachStderr: text and json print only the result on stdout, so notices go to
// stderr as "keel: warning: …"; stream-json keeps them on stdout as system lines.
func TestNoticesReachStderr(t *testing.T) {
	events := []event.Event{
		event.Notice{Level: "warn", Text: "settings.json:3:12: invalid JSON"},
		event.Notice{Level: "error", Text: "MCP server \"db\" failed to start: exec: \"dbmcp\": not found"},
		event.Notice{Level: "info", Text: "async hook started", Origin: event.Origin{AgentID: "a1", AgentName: "Explore"}},
		event.Result{Subtype: "success", Text: "done"},
	}
	wantErr := "keel: warning: settings.json:3:12: invalid JSON\n" +
		"keel: error: MCP server \"db\" failed to start: exec: \"dbmcp\": not found\n" +
		"keel: [Explore] async hook started\n"
	for _, format := range []string{"text", "json", "stream-json"} {
		t.Run(format, func(t *testing.T) {
			out, errOut := renderHeadless(t, format, events)
			if format == "stream-json" {
				if errOut.Len() != 0 || strings.Count(out.String(), `"subtype":"notice"`) != 3 {
					t.Errorf("stream-json: stderr %q, stdout %s", errOut.String(), out.String())
				}
				return
			}
			if diff := cmp.Diff(wantErr, errOut.String()); diff != "" {
				t.Errorf("stderr mismatch (-want +got):\n%s", diff)
			}
			if strings.Contains(out.String(), "invalid JSON") {
				t.Errorf("notices leaked into stdout: %s", out.String())
			}
		})
	}
}

// TestDenialsAndRetriesReachStderr: in text and json output every denied call and every retry
// is a line on stderr, in words; stream-json keeps denials on stdout and says retries on both.
func TestDenialsAndRetriesReachStderr(t *testing.T) {
	events := []event.Event{
		//keel:duration a value shown, not a limit
		event.Retry{Attempt: 2, MaxAttempts: 10, Delay: 6800 * time.Millisecond, Err: "connection refused to http://127.0.0.1:9/v1/messages"},
		event.PermissionDenied{ToolUseID: "t1", ToolName: "Edit", Input: json.RawMessage(`{"file_path":"calc.py","old_string":"-","new_string":"+"}`),
			Reason: `permission to use Edit on calc.py was not granted: edits need approval, and there is no one to ask in a headless run; to allow it, add "Edit(./calc.py)" to permissions.allow in settings (or --allowedTools)`},
		event.PermissionDenied{Origin: event.Origin{AgentID: "a1", AgentName: "fixer"}, ToolName: "Bash", Input: json.RawMessage(`{"command":"seq 1 3"}`), Reason: "denied by rule Bash(seq:*)"},
		event.Result{Subtype: "success", Text: "I fixed it."},
	}
	wantErr := "keel: retrying (attempt 3 of 10 in 7 s): connection refused to http://127.0.0.1:9/v1/messages\n" +
		`keel: denied Edit(calc.py): permission to use Edit on calc.py was not granted: edits need approval, and there is no one to ask in a headless run; to allow it, add "Edit(./calc.py)" to permissions.allow in settings (or --allowedTools)` + "\n" +
		"keel: [fixer] denied Bash(seq 1 3): denied by rule Bash(seq:*)\n"
	for _, format := range []string{"text", "json", "stream-json"} {
		t.Run(format, func(t *testing.T) {
			out, errOut := renderHeadless(t, format, events)
			want := wantErr
			if format == "stream-json" {
				want = strings.SplitAfter(wantErr, "\n")[0]
			}
			if diff := cmp.Diff(want, errOut.String()); diff != "" {
				t.Errorf("stderr mismatch (-want +got):\n%s", diff)
			}
			if format == "text" && out.String() != "I fixed it.\n" {
				t.Errorf("stdout holds more than the answer: %q", out.String())
			}
		})
	}
	var conv bytes.Buffer
	r, _ := New("text", &conv, true)
	for _, e := range events {
		_ = r.Render(e)
	}
	for _, w := range []string{"retrying (attempt 3 of 10 in 7 s): connection refused", "denied Edit(calc.py): permission to use Edit"} {
		if !strings.Contains(conv.String(), w) {
			t.Errorf("the verbose view lacks %q:\n%s", w, conv.String())
		}
	}
}

// renderHeadless renders events as a headless run in format does, and returns stdout and
// stderr.
func renderHeadless(t *testing.T, format string, events []event.Event) (out, errOut *bytes.Buffer) {
	t.Helper()
	out, errOut = &bytes.Buffer{}, &bytes.Buffer{}
	r, err := New(format, out, false)
	if err != nil {
		t.Fatal(err)
	}
	r = WithNotices(r, format, false, errOut)
	for _, e := range events {
		if err := r.Render(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Finish(); err != nil {
		t.Fatal(err)
	}
	return out, errOut
}

// TestUnpricedModelsAreSaid: a model without a known price is named where the cost is said —
// a warning on stderr in text and json, a system notice in stream-json, once per model over
// the results of a session — and the result lists it; total_cost_usd is the priced models'.
func TestUnpricedModelsAreSaid(t *testing.T) {
	result := event.Result{Subtype: "success", Text: "done", CostUSD: 0.5, ModelUsage: map[string]event.ModelUsage{
		"claude-mystery-9-9": {PriceKnown: false},
		"claude-opus-5-5":    {PriceKnown: true, CostUSD: 0.5},
	}}
	warning := "keel: warning: no price is known for model claude-mystery-9-9: its tokens are not in the cost (total_cost_usd counts priced models only)\n"
	for _, format := range []string{"text", "json", "stream-json"} {
		t.Run(format, func(t *testing.T) {
			var out, errOut bytes.Buffer
			r, err := New(format, &out, false)
			if err != nil {
				t.Fatal(err)
			}
			r = WithNotices(r, format, false, &errOut)
			for range 2 { // two turns of one session
				if err := r.Render(result); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.Finish(); err != nil {
				t.Fatal(err)
			}
			switch format {
			case "stream-json":
				lines := strings.Split(strings.TrimSpace(out.String()), "\n")
				if len(lines) != 3 || !strings.Contains(lines[0], `"subtype":"notice"`) || !strings.Contains(lines[0], "claude-mystery-9-9") {
					t.Errorf("stream-json: want one notice, then two results:\n%s", out.String())
				}
				if !strings.Contains(lines[1], `"total_cost_usd":0.5,`) || !strings.Contains(lines[1], `"unpriced_models":["claude-mystery-9-9"]`) {
					t.Errorf("the result does not name the unpriced model: %s", lines[1])
				}
			default:
				if diff := cmp.Diff(warning, errOut.String()); diff != "" {
					t.Errorf("stderr mismatch (-want +got):\n%s", diff)
				}
				if format == "json" && !strings.Contains(out.String(), `"unpriced_models":["claude-mystery-9-9"]`) {
					t.Errorf("the result does not name the unpriced model: %s", out.String())
				}
			}
		})
	}
}
