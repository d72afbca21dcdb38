package tui

import (
	"github.com/keel-dev/keel"
	"github.com/keel-dev/keel/internal/cost"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/render"
)

// plainLine is how the line-oriented UI (RunPlain) says an event that is not the answer's
// text or a tool call: in the words the headless renderer uses for notices, denials, retries
// and failed results, so a person reads the same sentence wherever keel runs. "" for events
// it does not show.
func plainLine(ev keel.Event) string {
	switch e := ev.(type) {
	case keel.Notice:
		return render.NoticeLine(event.Notice{Origin: event.Origin(e.Origin), Level: e.Level, Text: e.Text})
	case keel.PermissionDenied:
		return render.DenialLine(event.PermissionDenied{Origin: event.Origin(e.Origin), ToolUseID: e.ToolUseID,
			ToolName: e.ToolName, Input: e.Input, Reason: e.Reason})
	case keel.Retry:
		return render.RetryLine(event.Retry{Origin: event.Origin(e.Origin), Attempt: e.Attempt, MaxAttempts: e.MaxAttempts,
			Delay: e.Delay, Err: e.Err})
	case keel.Result:
		all, any := true, len(e.ModelUsage) == 0
		for _, mu := range e.ModelUsage {
			all, any = all && mu.PriceKnown, any || mu.PriceKnown
		}
		what := "done"
		if e.IsError {
			what = render.ResultMessage(event.Result{Subtype: e.Subtype, Text: e.Text})
		}
		return "[" + what + " · " + cost.Format(e.CostUSD, all, any, 4) + "]"
	}
	return ""
}
