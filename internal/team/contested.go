package team

import (
	"context"
	"fmt"

	"github.com/keel-dev/keel/internal/coord"
)

// reportContested tells the lead, once per task, that a task just given back (rel, as
// Release returned it) became contested: released coord.ContestedAfter times, it is no longer
// taken by whoever is idle — each taking is a paid model turn that ended the same way — and
// waits for the lead to assign it (TaskUpdate owner), split it or drop it. The release that
// makes the count reach the threshold is the one that reports, so the lead hears of it once
// however many members release it later.
func (t *Team) reportContested(ctx context.Context, rel coord.Task, last string) {
	if rel.Releases != coord.ContestedAfter || rel.Status == coord.StatusCompleted {
		return
	}
	text := fmt.Sprintf("Task #%s (%s) went back to the board %d times without being completed (last: %s). It is contested now: idle teammates no longer take it by themselves. Assign it to a teammate (TaskUpdate owner), split it, or delete it.",
		rel.ID, rel.Subject, rel.Releases, last)
	msg := coord.Message{ID: newID(), From: rel.ReleasedBy, To: LeadAlias, Type: TypeMessage, Text: text, Summary: "task #" + rel.ID + " contested"}
	if err := t.be.Mailbox().Send(context.WithoutCancel(ctx), msg); err != nil {
		t.logger.Warn("report contested task", "task", rel.ID, "err", err)
	}
}
