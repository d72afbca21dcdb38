package cron

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/lazy"
	robfig "github.com/robfig/cron/v3"
)

// MinInterval is the shortest interval a schedule may have: a cron expression has minutes as
// its finest field, and an @every interval below it would wake the supervisor for nothing a
// model can act on.
const MinInterval = time.Minute

// parser reads the five standard fields in local time, plus the descriptors (@hourly, @daily,
// @every 10m…). Seconds are not a field: Claude Code's expressions have five.
var parser = lazy.Value[robfig.Parser]{New: func() robfig.Parser {
	return robfig.NewParser(robfig.Minute | robfig.Hour | robfig.Dom | robfig.Month | robfig.Dow | robfig.Descriptor)
}}

// exprHelp is what every bad schedule is told, so the model can correct its call at once.
const exprHelp = `want a 5-field cron expression in local time "M H DoM Mon DoW" (e.g. "*/5 * * * *" = every 5 minutes, ` +
	`"30 14 28 2 *" = Feb 28 at 14:30), a descriptor (@hourly, @daily, @weekly, @every 30m), ` +
	`or an RFC 3339 time for one run (e.g. "2026-05-01T14:30:00+02:00")`

// Schedule is when a job fires: a cron expression, or one moment (a one-shot time).
type Schedule struct {
	// Spec is the schedule as written.
	Spec string
	// At is the moment of a one-shot time; zero for a cron expression.
	At    time.Time
	sched robfig.Schedule
}

// ParseSchedule reads spec: a cron expression or descriptor, or an RFC 3339 time, which must
// lie after now. A cron expression that never matches (February 30th) is refused too: a job
// that never fires is a mistake.
func ParseSchedule(spec string, now time.Time) (Schedule, error) {
	return parseSchedule(spec, now, MinInterval)
}

// parseSchedule is ParseSchedule with the shortest interval allowed.
func parseSchedule(spec string, now time.Time, minInterval time.Duration) (Schedule, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return Schedule{}, fmt.Errorf("empty schedule: %s", exprHelp)
	}
	if at, err := time.Parse(time.RFC3339, spec); err == nil {
		if !at.After(now) {
			return Schedule{}, fmt.Errorf("time %s is in the past (it is now %s): give a time in the future",
				at.Format(time.RFC3339), now.Format(time.RFC3339))
		}
		return Schedule{Spec: spec, At: at}, nil
	}
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		return Schedule{}, fmt.Errorf("cron expression %q: time zones are not supported; expressions are in local time", spec)
	}
	s, err := parser.Get().Parse(spec)
	if err != nil {
		return Schedule{}, fmt.Errorf("cron expression %q: %v; %s", spec, err, exprHelp)
	}
	if d, ok := s.(robfig.ConstantDelaySchedule); ok && d.Delay < minInterval {
		return Schedule{}, fmt.Errorf("cron expression %q: the interval %v is shorter than %v", spec, d.Delay, minInterval)
	}
	out := Schedule{Spec: spec, sched: s}
	if out.Next(now).IsZero() {
		return Schedule{}, fmt.Errorf("cron expression %q never matches a date; %s", spec, exprHelp)
	}
	return out, nil
}

// mustSchedule re-reads a stored job's schedule. Stored specs were valid when stored; one
// that no longer parses (a record written by hand) is reported with the job.
func mustSchedule(j Job) (Schedule, error) {
	if !j.At.IsZero() {
		return Schedule{Spec: j.Cron, At: j.At}, nil
	}
	s, err := parser.Get().Parse(j.Cron)
	if err != nil {
		return Schedule{}, fmt.Errorf("job %s: stored cron expression %q: %w", j.ID, j.Cron, err)
	}
	return Schedule{Spec: j.Cron, sched: s}, nil
}

// OneShot reports whether the schedule is a single moment.
func (s Schedule) OneShot() bool { return !s.At.IsZero() }

// Next returns the first fire time after t, or the zero time when there is none.
func (s Schedule) Next(t time.Time) time.Time {
	if s.OneShot() {
		if s.At.After(t) {
			return s.At
		}
		return time.Time{}
	}
	return s.sched.Next(t)
}

// maxCount bounds the walk over missed ticks: a year of one-minute ticks is half of it.
const maxCount = 1 << 20

// Due is what a job owes at now: the newest tick that has come (zero when none), how many
// earlier ticks since after passed without a run, and the first of those.
type Due struct {
	Tick        time.Time
	Missed      int
	FirstMissed time.Time
}

// DueAt returns the ticks of s in (after, now]. Only the newest is to run: a scheduler that
// was down for an hour runs an every-five-minutes job once, and says that eleven were missed.
func (s Schedule) DueAt(after, now time.Time) Due {
	first := s.Next(after)
	if first.IsZero() || first.After(now) {
		return Due{}
	}
	d := Due{Tick: first}
	for range maxCount {
		n := s.Next(d.Tick)
		if n.IsZero() || n.After(now) {
			break
		}
		d.Tick = n
		d.Missed++
	}
	if d.Missed > 0 {
		d.FirstMissed = first
	}
	return d
}

// Human describes the schedule for people and the model: "every 5 minutes", "daily at 09:00",
// "once at 2026-05-01 14:30 +02:00"; other expressions are named as written.
func (s Schedule) Human() string {
	if s.OneShot() {
		return "once at " + s.At.Format("2006-01-02 15:04:05 -07:00")
	}
	if d, ok := s.sched.(robfig.ConstantDelaySchedule); ok {
		return "every " + d.Delay.String()
	}
	switch s.Spec {
	case "@hourly":
		return "hourly at :00"
	case "@daily", "@midnight":
		return "daily at 00:00"
	case "@weekly":
		return "weekly on Sunday at 00:00"
	case "@monthly":
		return "monthly on the 1st at 00:00"
	case "@yearly", "@annually":
		return "yearly on Jan 1 at 00:00"
	}
	f := strings.Fields(s.Spec)
	if len(f) != 5 {
		return "cron " + s.Spec
	}
	rest := strings.Join(f[2:], " ")
	switch {
	case f[0] == "*" && f[1] == "*" && rest == "* * *":
		return "every minute"
	case strings.HasPrefix(f[0], "*/") && f[1] == "*" && rest == "* * *":
		return "every " + f[0][2:] + " minutes"
	case isNumber(f[0]) && f[1] == "*" && rest == "* * *":
		return fmt.Sprintf("hourly at :%02s", f[0])
	case isNumber(f[0]) && strings.HasPrefix(f[1], "*/") && rest == "* * *":
		return fmt.Sprintf("every %s hours at :%02s", f[1][2:], f[0])
	case isNumber(f[0]) && isNumber(f[1]) && rest == "* * *":
		return fmt.Sprintf("daily at %02s:%02s", f[1], f[0])
	case isNumber(f[0]) && isNumber(f[1]) && rest == "* * 1-5":
		return fmt.Sprintf("weekdays at %02s:%02s", f[1], f[0])
	}
	return "cron " + s.Spec
}

func isNumber(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// IntervalSpec turns an interval ("5m", "2h", "1d" — /loop's form) into a schedule spec: a
// cron expression when the interval divides its unit evenly (so runs fall on round times,
// as Claude Code's /loop does), else @every.
func IntervalSpec(interval string) (string, error) {
	d, err := parseInterval(interval)
	if err != nil {
		return "", err
	}
	switch m := int(d / time.Minute); {
	case d%time.Minute != 0:
		// Round up: a schedule has minutes as its finest unit.
		return "@every " + (d.Truncate(time.Minute) + time.Minute).String(), nil
	case m < 60 && 60%m == 0:
		if m == 1 {
			return "* * * * *", nil
		}
		return fmt.Sprintf("*/%d * * * *", m), nil
	case m%60 == 0 && m < 24*60 && (24*60)%m == 0:
		return fmt.Sprintf("0 */%d * * *", m/60), nil
	case m == 24*60:
		return "0 0 * * *", nil
	}
	return "@every " + d.String(), nil
}

// parseInterval reads N followed by s, m, h or d; at least [MinInterval].
func parseInterval(s string) (time.Duration, error) {
	bad := fmt.Errorf("interval %q: want a number and a unit, s, m, h or d (e.g. 5m, 2h, 1d)", s)
	if len(s) < 2 {
		return 0, bad
	}
	n, err := strconv.Atoi(s[:len(s)-1])
	if err != nil || n <= 0 {
		return 0, bad
	}
	unit := map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}[s[len(s)-1]]
	if unit == 0 {
		return 0, bad
	}
	d := time.Duration(n) * unit
	if d < MinInterval {
		return 0, fmt.Errorf("interval %q is shorter than %v", s, MinInterval)
	}
	return d, nil
}
