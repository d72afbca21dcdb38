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
