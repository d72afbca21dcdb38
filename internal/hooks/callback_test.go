package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/waittest"
)

// TestCallbacks: hooks the driving program answers mean what command hooks mean.
func TestCallbacks(t *testing.T) {
	tests := []struct {
		name   string
		event  Event
		answer string
		err    error
		check  func(t *testing.T, out Outcome)
	}{
		{"deny with reason", PreToolUse, `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"not here"}}`, nil,
			func(t *testing.T, out Outcome) {
				if out.Decision != DecisionBlock || out.Reason != "not here" {
					t.Errorf("outcome = %v %q", out.Decision, out.Reason)
				}
			}},
		{"allow with updated input and context", PreToolUse, `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"file_path":"b.go"},"additionalContext":"ctx"}}`, nil,
			func(t *testing.T, out Outcome) {
				if out.Decision != DecisionAllow || string(out.UpdatedInput) != `{"file_path":"b.go"}` || !cmp.Equal(out.AdditionalContext, []string{"ctx"}) {
					t.Errorf("outcome = %+v", out)
				}
			}},
		{"defer is no opinion", PreToolUse, `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"defer"}}`, nil,
			func(t *testing.T, out Outcome) {
				if out.Decision != DecisionNone || out.Results[0].Warning != "" {
					t.Errorf("outcome = %+v", out)
				}
			}},
		{"permission request allow with updates", PermissionRequest, `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow","updatedPermissions":[{"type":"setMode","mode":"acceptEdits","destination":"session"}]}}}`, nil,
			func(t *testing.T, out Outcome) {
				if out.Decision != DecisionAllow || !strings.Contains(string(out.UpdatedPermissions), "acceptEdits") {
					t.Errorf("outcome = %+v", out)
				}
			}},
		{"permission request deny and interrupt", PermissionRequest, `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"no","interrupt":true}}}`, nil,
			func(t *testing.T, out Outcome) {
				if out.Decision != DecisionBlock || out.Reason != "no" || !out.Interrupt {
					t.Errorf("outcome = %+v", out)
				}
			}},
		{"display and watch paths", MessageDisplay, `{"hookSpecificOutput":{"hookEventName":"MessageDisplay","displayContent":"shown","watchPaths":["a.txt"]}}`, nil,
			func(t *testing.T, out Outcome) {
				if out.DisplayContent == nil || *out.DisplayContent != "shown" || !cmp.Equal(out.WatchPaths, []string{"a.txt"}) {
					t.Errorf("outcome = %+v", out)
				}
			}},
		{"async answers have no say", PreToolUse, `{"async":true}`, nil,
			func(t *testing.T, out Outcome) {
				if out.Decision != DecisionNone {
					t.Errorf("outcome = %+v", out)
				}
			}},
		{"a failed call is a non-blocking error", PreToolUse, "", errors.New("the SDK is gone"),
			func(t *testing.T, out Outcome) {
				if out.Decision != DecisionNone || out.Results[0].Err == nil || !strings.Contains(out.Results[0].Err.Error(), "the SDK is gone") {
					t.Errorf("outcome = %+v", out)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gotID, gotTool string
			var gotInput map[string]any
			r, problems := New(Config{
				Callbacks: []Callback{{Event: string(tt.event), IDs: []string{"hook_0"}}},
				Call: func(_ context.Context, id string, input json.RawMessage, toolUseID string) (json.RawMessage, error) {
					gotID, gotTool = id, toolUseID
					json.Unmarshal(input, &gotInput)
					return json.RawMessage(tt.answer), tt.err
				},
			})
			if len(problems) > 0 {
				t.Fatal(problems)
			}
			out := r.Run(t.Context(), tt.event, editInput())
			if gotID != "hook_0" || gotTool != "tu1" || gotInput["hook_event_name"] != string(tt.event) || gotInput["tool_name"] != "Edit" {
				t.Errorf("called %q for %q with %v", gotID, gotTool, gotInput)
			}
			tt.check(t, out)
		})
	}
}

func TestCallbackMatcherAndTimeout(t *testing.T) {
	calls := 0
	r, _ := New(Config{
		Callbacks: []Callback{{Event: "PreToolUse", Matcher: "Bash", IDs: []string{"b"}}, {Event: "PreToolUse", Matcher: "Edit", IDs: []string{"slow"}, Timeout: 0.05}},
		Call: func(ctx context.Context, id string, _ json.RawMessage, _ string) (json.RawMessage, error) {
			calls++
			if id == "b" {
				t.Errorf("the Bash callback ran for an Edit call")
			}
			<-ctx.Done()
			return nil, ctx.Err()
		},
	})
	// Without the callback's own 50ms timeout this would end only with the test's limit,
	// as a cancellation rather than a timeout.
	out := r.Run(waittest.Context(t), PreToolUse, editInput())
	if calls != 1 || !out.Results[0].TimedOut {
		t.Errorf("calls %d, result %+v: want the Edit callback, timed out", calls, out.Results)
	}
}
