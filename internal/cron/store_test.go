package cron_test

import (
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/coord/fscoord"
	"github.com/keel-dev/keel/internal/cron"
	"github.com/keel-dev/keel/internal/waittest"
)

// openStore opens a store on the records in dir through a handle of its own, as another
// process would; now is its clock. Its watches poll, rarely: under synctest a watch that
// waits in the kernel (fsnotify) would keep the bubble from ever being idle, and the tests
// wake schedulers by their timers.
func openStore(t *testing.T, dir string, now func() time.Time) (*cron.Store, func()) {
	t.Helper()
	b, err := fscoord.Open(dir, fscoord.Options{PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	release := func() {
		if !closed {
			closed = true
			_ = b.Close()
		}
	}
	t.Cleanup(release)
	return cron.NewStore(b.Records(), now), release
}

func origin(t *testing.T) cron.Origin {
	dir := t.TempDir()
	return cron.Origin{SessionID: "s1", NotifyDir: filepath.Join(dir, "notifications"), Cwd: filepath.Join(dir, "project")}
}

// at is a clock stopped at t, for store tests outside synctest.
func at(t time.Time) func() time.Time { return func() time.Time { return t } }

func TestCreateRefusesBadInputAndRecordsNothing(t *testing.T) {
	ctx := waittest.Context(t)
	now := at(time.Date(2026, 3, 10, 12, 0, 0, 0, time.Local))
	st, _ := openStore(t, t.TempDir(), now)
	o := origin(t)
	for _, tc := range []struct {
		spec cron.Spec
		want string
	}{
		{cron.Spec{Cron: "61 * * * *", Prompt: "p", Origin: o}, "above maximum"},
		{cron.Spec{Cron: "2020-01-01T00:00:00Z", Prompt: "p", Origin: o}, "in the past"},
		{cron.Spec{Cron: "*/5 * * * *", Prompt: "  ", Origin: o}, "prompt is empty"},
		{cron.Spec{Cron: "2026-03-10T13:00:00Z", Prompt: "p", Recurring: true, Origin: o}, "set recurring to false"},
	} {
		if _, err := st.Create(ctx, tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Create(%+v) = %v, want an error containing %q", tc.spec, err, tc.want)
		}
	}
	if jobs, err := st.List(ctx); err != nil || len(jobs) != 0 {
		t.Fatalf("after refused creates: %d jobs, %v; want none", len(jobs), err)
	}
	for _, id := range []string{"deadbeef", "../x", ""} {
		if _, err := st.Delete(ctx, id); !errors.Is(err, cron.ErrNotFound) {
			t.Errorf("Delete(%q) = %v, want ErrNotFound", id, err)
		}
	}
}

func TestCreateLimitsJobsPerProject(t *testing.T) {
	ctx := waittest.Context(t)
	st, _ := openStore(t, t.TempDir(), nil)
	o := origin(t)
	for range cron.MaxJobs {
		if _, err := st.Create(ctx, cron.Spec{Cron: "@hourly", Prompt: "p", Recurring: true, Origin: o}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Create(ctx, cron.Spec{Cron: "@hourly", Prompt: "p", Origin: o}); err == nil || !strings.Contains(err.Error(), "delete one") {
		t.Fatalf("job %d: %v, want the limit", cron.MaxJobs+1, err)
	}
	other := o
	other.Cwd += "-other"
	if _, err := st.Create(ctx, cron.Spec{Cron: "@hourly", Prompt: "p", Origin: other}); err != nil {
		t.Fatalf("another project is not limited by this one's jobs: %v", err)
	}
}

// TestClaimOncePerTick races claimers on separate handles (as separate supervisors would be)
// for each of several ticks: exactly one wins each, and while its run is pending no later
// tick is claimed.
func TestClaimOncePerTick(t *testing.T) {
	ctx := waittest.Context(t)
	dir := t.TempDir()
	start := time.Date(2026, 3, 10, 12, 0, 0, 0, time.Local)
	now := at(start)
	creator, _ := openStore(t, dir, now)
	j, err := creator.Create(ctx, cron.Spec{Cron: "*/5 * * * *", Prompt: "check the deploy", Recurring: true, Origin: origin(t)})
	if err != nil {
		t.Fatal(err)
	}
	const claimers = 8
	stores := make([]*cron.Store, claimers)
	for i := range stores {
		stores[i], _ = openStore(t, dir, now)
	}
	for tick := 1; tick <= 3; tick++ {
		now := start.Add(time.Duration(tick) * 5 * time.Minute)
		var mu sync.Mutex
		var won []cron.Run
		var wg sync.WaitGroup
		for _, st := range stores {
			wg.Go(func() {
				r, ok, err := st.Claim(ctx, j.ID, now)
				if err != nil {
					t.Error(err)
				}
				if ok {
					mu.Lock()
					won = append(won, r)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(won) != 1 {
			t.Fatalf("tick %d: %d claimers won, want exactly 1", tick, len(won))
		}
		if _, ok, _ := stores[0].Claim(ctx, j.ID, now.Add(5*time.Minute)); ok {
			t.Fatalf("tick %d: the next tick was claimed while the run is pending", tick)
		}
		if err := stores[tick%claimers].Finish(ctx, won[0]); err != nil {
			t.Fatal(err)
		}
		if want := now; !won[0].Tick.Equal(want) || won[0].Missed != 0 {
			t.Errorf("tick %d: claimed %v (missed %d), want %v", tick, won[0].Tick, won[0].Missed, want)
		}
	}
	got, err := creator.Get(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Runs != 3 || got.Pending != nil {
		t.Errorf("after three ticks: runs %d, pending %v; want 3 and none", got.Runs, got.Pending)
	}
}

// TestRecordsSurviveARestart: a second handle on the same store — the next process — sees the
// job and the run the first one claimed but did not finish, and finishes it.
func TestRecordsSurviveARestart(t *testing.T) {
	ctx := waittest.Context(t)
	dir := t.TempDir()
	start := time.Date(2026, 3, 10, 12, 0, 0, 0, time.Local)
	now := at(start)
	first, release := openStore(t, dir, now)
	j, err := first.Create(ctx, cron.Spec{Cron: "0 * * * *", Prompt: "hourly report", Recurring: true, Durable: true, Origin: origin(t)})
	if err != nil {
		t.Fatal(err)
	}
	run, ok, err := first.Claim(ctx, j.ID, start.Add(time.Hour))
	if err != nil || !ok {
		t.Fatalf("claim: %v, %v", ok, err)
	}
	release()

	second, _ := openStore(t, dir, now)
	jobs, err := second.List(ctx)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("after a restart: %d jobs, %v; want the one made before", len(jobs), err)
	}
	if diff := cmp.Diff(&run, jobs[0].Pending); diff != "" {
		t.Errorf("pending run after a restart, mismatch (-want +got):\n%s", diff)
	}
	if _, ok, _ := second.Claim(ctx, j.ID, start.Add(time.Hour)); ok {
		t.Fatal("the tick claimed before the restart was claimed again")
	}
	if err := second.Finish(ctx, run); err != nil {
		t.Fatal(err)
	}
	if err := second.Finish(ctx, run); err != nil {
		t.Fatalf("finishing twice: %v", err)
	}
	got, err := second.Get(ctx, j.ID)
	if err != nil || got.Runs != 1 || got.Pending != nil || !got.LastTick.Equal(run.Tick) {
		t.Fatalf("after finishing: %+v, %v; want one run, none pending, last tick %v", got, err, run.Tick)
	}
}

func TestLastRunDeletesTheJob(t *testing.T) {
	ctx := waittest.Context(t)
	start := time.Date(2026, 3, 10, 12, 0, 0, 0, time.Local)
	now := at(start)
	st, _ := openStore(t, t.TempDir(), now)
	o := origin(t)
	once, err := st.Create(ctx, cron.Spec{Cron: start.Add(time.Minute).Format(time.RFC3339), Prompt: "remind me", Origin: o})
	if err != nil {
		t.Fatal(err)
	}
	pinned, err := st.Create(ctx, cron.Spec{Cron: "30 14 * * *", Prompt: "at half past two", Origin: o})
	if err != nil {
		t.Fatal(err)
	}
	weekly, err := st.Create(ctx, cron.Spec{Cron: "0 9 * * *", Prompt: "daily, expiring", Recurring: true, Origin: o})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id   string
		at   time.Time
		last bool
	}{
		{once.ID, start.Add(time.Minute), true},
		{pinned.ID, time.Date(2026, 3, 10, 14, 30, 0, 0, time.Local), true},
		{weekly.ID, time.Date(2026, 3, 11, 9, 0, 0, 0, time.Local), false},
		// Seven days after it was made (3/17 12:00) the job has expired: the next tick is its last.
		{weekly.ID, time.Date(2026, 3, 18, 9, 0, 0, 0, time.Local), true},
	} {
		r, ok, err := st.Claim(ctx, tc.id, tc.at)
		if err != nil || !ok || r.Last != tc.last {
			t.Fatalf("claim %s at %v: ok %v last %v err %v; want last %v", tc.id, tc.at, ok, r.Last, err, tc.last)
		}
		if err := st.Finish(ctx, r); err != nil {
			t.Fatal(err)
		}
		_, err = st.Get(ctx, tc.id)
		if gone := errors.Is(err, cron.ErrNotFound); gone != tc.last {
			t.Errorf("job %s after its run at %v: gone %v (%v), want %v", tc.id, tc.at, gone, err, tc.last)
		}
	}
}

func TestEndSessionDeletesOnlyItsJobsThatAreNotDurable(t *testing.T) {
	ctx := waittest.Context(t)
	st, _ := openStore(t, t.TempDir(), nil)
	mine, theirs := origin(t), origin(t)
	theirs.SessionID = "s2"
	for _, tc := range []struct {
		o       cron.Origin
		durable bool
	}{{mine, false}, {mine, true}, {theirs, false}} {
		if _, err := st.Create(ctx, cron.Spec{Cron: "@daily", Prompt: "p", Recurring: true, Durable: tc.durable, Origin: tc.o}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.EndSession(ctx, mine.SessionID); err != nil {
		t.Fatal(err)
	}
	jobs, err := st.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type kept struct {
		Session string
		Durable bool
	}
	var got []kept
	for _, j := range jobs {
		got = append(got, kept{j.Origin.SessionID, j.Durable})
	}
	if diff := cmp.Diff([]kept{{"s1", true}, {"s2", false}}, got); diff != "" {
		t.Errorf("jobs after the session ended, mismatch (-want +got):\n%s", diff)
	}
}

// The test-only lower minimum lets a store accept an interval of seconds; the default store,
// and a minimum below a second, still refuse it.
func TestWithMinIntervalLowersTheMinimumForTests(t *testing.T) {
	ctx := waittest.Context(t)
	now := at(time.Date(2026, 3, 10, 12, 0, 0, 0, time.Local))
	st, _ := openStore(t, t.TempDir(), now)
	spec := cron.Spec{Cron: "@every 3s", Prompt: "p", Recurring: true, Origin: origin(t)}
	for name, s := range map[string]*cron.Store{"default": st, "below a second": st.WithMinInterval(time.Millisecond)} {
		if _, err := s.Create(ctx, spec); err == nil || !strings.Contains(err.Error(), "shorter than 1m0s") {
			t.Errorf("%s: Create(@every 3s) = %v, want the minute minimum", name, err)
		}
	}
	j, err := st.WithMinInterval(2*time.Second).Create(ctx, spec)
	if err != nil {
		t.Fatalf("Create(@every 3s) with a 2s minimum: %v", err)
	}
	if _, err := st.WithMinInterval(2*time.Second).Create(ctx, cron.Spec{Cron: "@every 1s", Prompt: "p", Recurring: true, Origin: spec.Origin}); err == nil {
		t.Error("Create(@every 1s) with a 2s minimum succeeded")
	}
	got, err := st.Get(ctx, j.ID) // the scheduler's side reads it back whatever the minimum
	if err != nil {
		t.Fatal(err)
	}
	s, err := got.Schedule()
	if err != nil {
		t.Fatal(err)
	}
	if next := s.Next(now()); next.Sub(now()) != 3*time.Second {
		t.Errorf("next tick %v after now, want 3s", next.Sub(now()))
	}
}
