package cron_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/coord/fscoord"
	"github.com/keel-dev/keel/internal/cron"
	"github.com/keel-dev/keel/internal/waittest"
)

// A team's run is reported to the member that made the job through the team's mailbox, as
// the task notification a session's queue would hold; reporting it again (a scheduler that
// died before recording the finish) leaves one message; a job that names no member is an
// error, not a report lost.
func TestMailReportsARunOnceToTheMember(t *testing.T) {
	ctx := waittest.Context(t)
	b, err := fscoord.Open(t.TempDir(), fscoord.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	tick := time.Date(2026, 3, 10, 12, 5, 0, 0, time.UTC)
	j := cron.Job{ID: "j1", Cron: "*/5 * * * *", Prompt: "check the deploy", Recurring: true,
		Origin: cron.Origin{SessionID: "s1", Team: "t1", Member: "team-lead"}}
	r := cron.Run{ID: "cron-j1-1", JobID: "j1", Tick: tick, Missed: 2, FirstMissed: tick.Add(-10 * time.Minute)}
	for range 2 {
		if err := cron.Mail(ctx, b.Mailbox(), j, r, "deployed fine", nil); err != nil {
			t.Fatal(err)
		}
	}
	msgs, err := b.Mailbox().Fetch(ctx, "team-lead", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].ID != r.ID || msgs[0].From != cron.From {
		t.Fatalf("the lead's inbox: %+v; want one report from %s", msgs, cron.From)
	}
	if text := msgs[0].Text; !strings.Contains(text, "<task-id>cron-j1-1</task-id>") || !strings.Contains(text, "deployed fine") ||
		!strings.Contains(text, "2 earlier ticks since") {
		t.Errorf("the report: %q", text)
	}
	j.Origin.Member = ""
	if err := cron.Mail(ctx, b.Mailbox(), j, cron.Run{ID: "cron-j1-2"}, "x", errors.New("boom")); err == nil {
		t.Error("a report to no member succeeded")
	}
}
