package render

import (
	"bytes"
	"strings"
	"testing"

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
			var out, errOut bytes.Buffer
			r, err := New(format, &out, false)
			if err != nil {
				t.Fatal(err)
			}
			r = WithNotices(r, format, false, &errOut)
			for _, e := range events {
				if err := r.Render(e); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.Finish(); err != nil {
				t.Fatal(err)
			}
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
