package cron

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseScheduleRefusesBadInput(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.Local)
	for _, tc := range []struct {
		spec, want string
	}{
		{"", "empty schedule"},
		{"* * *", `cron expression "* * *"`},
		{"61 * * * *", "end of range (61) above maximum (59)"},
		{"0 0 31 2 *", "never matches"},
		{"@every 10s", "shorter than 1m0s"},
		{"CRON_TZ=UTC 0 9 * * *", "time zones are not supported"},
		{now.Add(-time.Minute).Format(time.RFC3339), "is in the past"},
		{now.Format(time.RFC3339), "is in the past"},
		{"every five minutes", "want a 5-field cron expression"},
	} {
		_, err := ParseSchedule(tc.spec, now)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSchedule(%q) = %v, want an error containing %q", tc.spec, err, tc.want)
		}
	}
}

func TestScheduleNext(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 2, 30, 0, time.Local)
	at := now.Add(90 * time.Second).Format(time.RFC3339)
	for _, tc := range []struct {
		spec string
		want time.Time
	}{
		{"*/5 * * * *", time.Date(2026, 3, 10, 12, 5, 0, 0, time.Local)},
		{"0 9 * * *", time.Date(2026, 3, 11, 9, 0, 0, 0, time.Local)},
		{"30 14 28 2 *", time.Date(2027, 2, 28, 14, 30, 0, 0, time.Local)},
		{"@hourly", time.Date(2026, 3, 10, 13, 0, 0, 0, time.Local)},
		{"@every 30m", time.Date(2026, 3, 10, 12, 32, 30, 0, time.Local)},
		{at, now.Add(90 * time.Second)},
	} {
		s, err := ParseSchedule(tc.spec, now)
		if err != nil {
			t.Fatalf("ParseSchedule(%q): %v", tc.spec, err)
		}
		if got := s.Next(now); !got.Equal(tc.want) {
			t.Errorf("%q: Next = %v, want %v", tc.spec, got, tc.want)
		}
	}
}

func TestDueAtRunsTheNewestTickAndCountsTheMissed(t *testing.T) {
	start := time.Date(2026, 3, 10, 12, 0, 0, 0, time.Local)
	s, err := ParseSchedule("*/5 * * * *", start)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		now  time.Time
		want Due
	}{
		{"before the first tick", start.Add(4 * time.Minute), Due{}},
		{"at the first tick", start.Add(5 * time.Minute), Due{Tick: start.Add(5 * time.Minute)}},
		{"an hour down", start.Add(time.Hour + 2*time.Minute),
			Due{Tick: start.Add(time.Hour), Missed: 11, FirstMissed: start.Add(5 * time.Minute)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, s.DueAt(start, tc.now)); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
	once, err := ParseSchedule(start.Add(time.Minute).Format(time.RFC3339), start)
	if err != nil {
		t.Fatal(err)
	}
	if got := once.DueAt(start, start.Add(time.Hour)); !got.Tick.Equal(start.Add(time.Minute)) || got.Missed != 0 {
		t.Errorf("one-shot an hour late: %+v, want its moment and nothing missed", got)
	}
	if got := once.DueAt(start.Add(time.Minute), start.Add(time.Hour)); !got.Tick.IsZero() {
		t.Errorf("one-shot after its tick was claimed: %+v, want nothing due", got)
	}
}

func TestHuman(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	for spec, want := range map[string]string{
		"* * * * *":            "every minute",
		"*/5 * * * *":          "every 5 minutes",
		"7 * * * *":            "hourly at :07",
		"0 */2 * * *":          "every 2 hours at :00",
		"30 9 * * *":           "daily at 09:30",
		"0 9 * * 1-5":          "weekdays at 09:00",
		"@daily":               "daily at 00:00",
		"@every 90m":           "every 1h30m0s",
		"0 9 1 * *":            "cron 0 9 1 * *",
		"2026-03-10T14:30:00Z": "once at 2026-03-10 14:30:00 +00:00",
	} {
		s, err := ParseSchedule(spec, now)
		if err != nil {
			t.Fatalf("ParseSchedule(%q): %v", spec, err)
		}
		if got := s.Human(); got != want {
			t.Errorf("Human(%q) = %q, want %q", spec, got, want)
		}
	}
}

func TestIntervalSpec(t *testing.T) {
	for in, want := range map[string]string{
		"1m":  "* * * * *",
		"5m":  "*/5 * * * *",
		"7m":  "@every 7m0s",
		"90s": "@every 2m0s",
		"2h":  "0 */2 * * *",
		"5h":  "@every 5h0m0s",
		"1d":  "0 0 * * *",
		"2d":  "@every 48h0m0s",
	} {
		got, err := IntervalSpec(in)
		if err != nil || got != want {
			t.Errorf("IntervalSpec(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "5", "m", "0m", "-5m", "5w", "30s"} {
		if got, err := IntervalSpec(in); err == nil {
			t.Errorf("IntervalSpec(%q) = %q, want an error", in, got)
		}
	}
}
