package cron

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/keel-dev/keel/internal/background"
	"github.com/keel-dev/keel/internal/coord"
)

// ActiveKey is the record that marks a team's records as holding scheduled jobs (written by
// the first [Store.Create] of a job with Origin.Team): a supervisor lists a server's teams
// with it and schedules only those that have it.
const ActiveKey = "cron/active"

// WakeKey is the record of the supervisor's own store that a session touches after it made
// a team's job ([Store.Wake]), so the supervisor looks for teams with jobs at once.
const WakeKey = "cron/wake"

// From is the sender of the reports [Mail] sends.
const From = "keel-scheduler"

// mailResultLimit cuts a run's result in a team report, well below a message's budget.
const mailResultLimit = 64 << 10

// Mail reports run r of job j to the team member that made the job (Origin.Member) through
// the team's mailbox mb, as the task notification [Deliver] would queue: a team's jobs may run
// in any machine's supervisor, which reaches the team but not the session's notification
// directory. The message id is the run id, and an inbox keeps one message per id, so a
// report sent again after a crash reaches the member once.
func Mail(ctx context.Context, mb coord.Mailbox, j Job, r Run, text string, runErr error) error {
	if j.Origin.Member == "" {
		return fmt.Errorf("report scheduled run %s: job %s names no team member to report to", r.ID, j.ID)
	}
	if len(text) > mailResultLimit {
		text = text[:mailResultLimit] + "\n[cut: the result was longer]"
	}
	n := Notification(j, r, text, runErr)
	err := mb.Send(ctx, coord.Message{ID: r.ID, From: From, To: j.Origin.Member, Text: n.Text(), Summary: n.Summary})
	if err != nil {
		return fmt.Errorf("report scheduled run %s to %s of team %s: %w", r.ID, j.Origin.Member, j.Origin.Team, err)
	}
	return nil
}

// Deliver queues the report of run r of job j in the notification queue of the session that
// made the job, where its next request boundary picks it up. The notification's task id is
// the run id and the queue keeps one notification per task id (and drops one its transcript
// already holds), so delivering a run twice — after a crash between delivering and
// finishing — reaches the session once.
func Deliver(j Job, r Run, text string, runErr error) error {
	q, err := background.OpenQueue(j.Origin.NotifyDir)
	if err != nil {
		return fmt.Errorf("report scheduled run %s: %w", r.ID, err)
	}
	if err := q.Push(Notification(j, r, text, runErr)); err != nil {
		return fmt.Errorf("report scheduled run %s: %w", r.ID, err)
	}
	return nil
}

// Notification is the task notification of run r: the background queue's format, so the
// session, its transcript and every output mode treat it as any background task's.
func Notification(j Job, r Run, text string, runErr error) background.Notification {
	n := background.Notification{TaskID: r.ID, Status: background.StatusCompleted, Summary: Summary(j, r), Result: text}
	if runErr != nil {
		n.Status, n.Error = background.StatusFailed, runErr.Error()
	}
	return n
}

// Summary is the one line that says which job ran, when, and what it missed.
func Summary(j Job, r Run) string {
	var b strings.Builder
	human := j.Cron
	if s, err := j.Schedule(); err == nil {
		human = s.Human()
	}
	fmt.Fprintf(&b, "Scheduled job %s (%s, prompt %q) ran for its tick at %s", j.ID, human, excerpt(j.Prompt, 80),
		r.Tick.Format(time.RFC3339))
	if r.Missed > 0 {
		ticks := "ticks"
		if r.Missed == 1 {
			ticks = "tick"
		}
		fmt.Fprintf(&b, "; %d earlier %s since %s did not run (the keel supervisor was not running, or the previous run was still going) and were run once now",
			r.Missed, ticks, r.FirstMissed.Format(time.RFC3339))
	}
	if r.Last {
		b.WriteString("; this was its last run and the job is deleted")
	}
	return b.String()
}

// excerpt cuts s to n characters on one line.
func excerpt(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
