package tui

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/keel-dev/keel"
)

// TestPlainLine: the line-oriented UI says notices, denials, retries and results in the
// headless renderer's words, never a result code.
func TestPlainLine(t *testing.T) {
	for _, tt := range []struct {
		ev   keel.Event
		want string
	}{
		{keel.Notice{Level: "warn", Text: "hook timed out"}, "keel: warning: hook timed out"},
		{keel.PermissionDenied{ToolName: "Edit", Input: json.RawMessage(`{"file_path":"calc.py"}`), Reason: "not granted"},
			"keel: denied Edit(calc.py): not granted"},
		{keel.Retry{Attempt: 2, MaxAttempts: 10, Delay: 7 * time.Second, Err: "connection refused to http://x"}, //keel:duration a value printed, not a limit
			"keel: retrying (attempt 3 of 10 in 7 s): connection refused to http://x"},
		{keel.Result{Subtype: "error_during_execution", IsError: true, Text: "context canceled"}, "[Interrupted. · $0.0000]"},
		{keel.Result{Subtype: "error_max_turns", IsError: true}, "[Stopped at the turn limit. · $0.0000]"},
		{keel.Result{Subtype: "success", CostUSD: 0.0123}, "[done · $0.0123]"},
	} {
		if got := plainLine(tt.ev); got != tt.want {
			t.Errorf("plainLine(%#v) = %q, want %q", tt.ev, got, tt.want)
		}
	}
}
