package cron_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/background"
	"github.com/keel-dev/keel/internal/cron"
)

// runner is the supervisor's part in these tests: it records each RunJob call and answers
// at once, or, when block is set, only when its context ends (a run in progress when the
// scheduler's process dies).
type runner struct {
	block bool

	mu    sync.Mutex
	calls []string
}

func (r *runner) RunJob(ctx context.Context, j cron.Job, run cron.Run) (string, error) {
	r.mu.Lock()
	r.calls = append(r.calls, run.ID)
	r.mu.Unlock()
	if r.block {
		<-ctx.Done()
		return "", context.Cause(ctx)
	}
	return "did: " + j.Prompt, nil
}

func (r *runner) runs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// scheduler runs a scheduler over its own handle on the records in dir until the returned
// stop is called (which waits for it, as a supervisor's shutdown or death ends it).
func startScheduler(t *testing.T, dir string, r cron.Runner) (stop func()) {
	t.Helper()
	return startLeased(t, dir, r, 0)
}

// startLeased is startScheduler for one of several schedulers sharing the records at once,
// whose runs are theirs for lease.
func startLeased(t *testing.T, dir string, r cron.Runner, lease time.Duration) (stop func()) {
	t.Helper()
	st, release := openStore(t, dir, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	s := cron.NewScheduler(cron.SchedulerConfig{Store: st, Runner: r, Lease: lease})
	go func() { done <- s.Run(ctx) }()
	// Stopped at the test's end too, so a test that fails early leaves no scheduler behind
	// (a synctest bubble waits for every goroutine in it).
	stop = sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("scheduler: %v", err)
		}
		release()
	})
	t.Cleanup(stop)
	return stop
}

// delivered reads the notification files the session's queue holds, oldest first.
func delivered(t *testing.T, dir string) []background.Notification {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	var out []background.Notification
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var n background.Notification
		if err := json.Unmarshal(b, &n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

func taskIDs(ns []background.Notification) []string {
	var ids []string
	for _, n := range ns {
		ids = append(ids, n.TaskID)
	}
	return ids
}

// runIDs lists the ids of job's runs at ticks, as every scheduler derives them.
func runIDs(job string, ticks ...time.Time) []string {
	var ids []string
	for _, tick := range ticks {
		ids = append(ids, "cron-"+job+"-"+strconv.FormatInt(tick.Unix(), 10))
	}
	return ids
}

// nextTick returns the first multiple of five minutes after t in local time.
func nextTick(t time.Time) time.Time {
	s, err := cron.ParseSchedule("*/5 * * * *", t)
	if err != nil {
		panic(err)
	}
	return s.Next(t)
}

func TestSchedulerRunsEachTickOnceAndReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir, o := t.TempDir(), origin(t)
		st, _ := openStore(t, dir, nil)
		j, err := st.Create(t.Context(), cron.Spec{Cron: "*/5 * * * *", Prompt: "check the deploy", Recurring: true, Origin: o})
		if err != nil {
			t.Fatal(err)
		}
		r := &runner{}
		stop := startScheduler(t, dir, r)
		first := nextTick(j.Created)
		time.Sleep(time.Until(first.Add(10*time.Minute + time.Second)))
		synctest.Wait()
		stop()

		want := runIDs(j.ID, first, first.Add(5*time.Minute), first.Add(10*time.Minute))
		if diff := cmp.Diff(want, r.runs()); diff != "" {
			t.Errorf("runs, mismatch (-want +got):\n%s", diff)
		}
		ns := delivered(t, o.NotifyDir)
		if diff := cmp.Diff(want, taskIDs(ns)); diff != "" {
			t.Fatalf("reports, mismatch (-want +got):\n%s", diff)
		}
		if n := ns[0]; n.Status != background.StatusCompleted || n.Result != "did: check the deploy" ||
			!strings.Contains(n.Summary, "Scheduled job "+j.ID+" (every 5 minutes") || strings.Contains(n.Summary, "did not run") {
			t.Errorf("first report: %+v", n)
		}
		got, err := st.Get(t.Context(), j.ID)
		if err != nil || got.Runs != 3 || got.Pending != nil {
			t.Errorf("job after three ticks: %+v, %v", got, err)
		}
	})
}

// TestSchedulerRunsMissedTicksOnce: with no scheduler for an hour, an every-five-minutes job
// runs once when one starts, and its report says how many ticks were missed; the next tick
// runs as usual.
func TestSchedulerRunsMissedTicksOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir, o := t.TempDir(), origin(t)
		st, _ := openStore(t, dir, nil)
		j, err := st.Create(t.Context(), cron.Spec{Cron: "*/5 * * * *", Prompt: "poll", Recurring: true, Durable: true, Origin: o})
		if err != nil {
			t.Fatal(err)
		}
		first := nextTick(j.Created)
		time.Sleep(time.Until(first.Add(55*time.Minute + 2*time.Minute))) // twelve ticks pass unseen

		r := &runner{}
		stop := startScheduler(t, dir, r)
		synctest.Wait()
		newest := first.Add(55 * time.Minute)
		if diff := cmp.Diff(runIDs(j.ID, newest), r.runs()); diff != "" {
			t.Fatalf("runs after an hour down, mismatch (-want +got):\n%s", diff)
		}
		ns := delivered(t, o.NotifyDir)
		if len(ns) != 1 || !strings.Contains(ns[0].Summary, "11 earlier ticks since "+first.Format(time.RFC3339)+" did not run") {
			t.Fatalf("report after an hour down: %+v, want one that says 11 ticks were missed", ns)
		}
		time.Sleep(time.Until(newest.Add(5*time.Minute + time.Second)))
		synctest.Wait()
		stop()
		if diff := cmp.Diff(runIDs(j.ID, newest, newest.Add(5*time.Minute)), r.runs()); diff != "" {
			t.Errorf("runs, mismatch (-want +got):\n%s", diff)
		}
		if ns := delivered(t, o.NotifyDir); len(ns) != 2 || strings.Contains(ns[1].Summary, "did not run") {
			t.Errorf("reports: %+v, want a second one with nothing missed", ns)
		}
	})
}

// TestSchedulerStoppedBetweenTicks: a scheduler that stops after one tick and a new one that
// starts before the next: the next tick runs once, the first never again.
func TestSchedulerStoppedBetweenTicks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir, o := t.TempDir(), origin(t)
		st, _ := openStore(t, dir, nil)
		j, err := st.Create(t.Context(), cron.Spec{Cron: "*/5 * * * *", Prompt: "p", Recurring: true, Origin: o})
		if err != nil {
			t.Fatal(err)
		}
		first := nextTick(j.Created)
		a := &runner{}
		stop := startScheduler(t, dir, a)
		time.Sleep(time.Until(first.Add(time.Minute)))
		synctest.Wait()
		stop()
		time.Sleep(2 * time.Minute)

		b := &runner{}
		stop = startScheduler(t, dir, b)
		time.Sleep(time.Until(first.Add(5*time.Minute + time.Second)))
		synctest.Wait()
		stop()
		if diff := cmp.Diff([][]string{runIDs(j.ID, first), runIDs(j.ID, first.Add(5*time.Minute))}, [][]string{a.runs(), b.runs()}); diff != "" {
			t.Errorf("runs of the first and second scheduler, mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(runIDs(j.ID, first, first.Add(5*time.Minute)), taskIDs(delivered(t, o.NotifyDir))); diff != "" {
			t.Errorf("reports, mismatch (-want +got):\n%s", diff)
		}
	})
}

// TestSchedulerFinishesARunItsPredecessorLeft: the scheduler dies while a run goes (its
// context ends, nothing is reported); the next one calls the runner again for the same run,
// which is how the supervisor's runner attaches to it, and reports it once.
func TestSchedulerFinishesARunItsPredecessorLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir, o := t.TempDir(), origin(t)
		st, _ := openStore(t, dir, nil)
		j, err := st.Create(t.Context(), cron.Spec{Cron: time.Now().Add(3 * time.Second).Format(time.RFC3339), Prompt: "once", Origin: o})
		if err != nil {
			t.Fatal(err)
		}
		dying := &runner{block: true}
		stop := startScheduler(t, dir, dying)
		time.Sleep(4 * time.Second)
		synctest.Wait()
		stop()
		if ns := delivered(t, o.NotifyDir); len(ns) != 0 {
			t.Fatalf("a run cut off by the scheduler's end was reported: %+v", ns)
		}
		left, err := st.Get(t.Context(), j.ID)
		if err != nil || left.Pending == nil {
			t.Fatalf("job after its scheduler died mid-run: %+v, %v; want its run pending", left, err)
		}

		next := &runner{}
		stop = startScheduler(t, dir, next)
		synctest.Wait()
		stop()
		want := []string{left.Pending.ID}
		if diff := cmp.Diff([][]string{want, want}, [][]string{dying.runs(), next.runs()}); diff != "" {
			t.Errorf("runs, mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, taskIDs(delivered(t, o.NotifyDir))); diff != "" {
			t.Errorf("reports, mismatch (-want +got):\n%s", diff)
		}
		if _, err := st.Get(t.Context(), j.ID); !errors.Is(err, cron.ErrNotFound) {
			t.Errorf("one-shot job after its run: %v, want it deleted", err)
		}
	})
}

// TestSchedulerRetriesAReportItCouldNotWrite: while the session's queue cannot be written the
// run stays pending; it is reported once it can be.
func TestSchedulerRetriesAReportItCouldNotWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir, o := t.TempDir(), origin(t)
		if err := os.WriteFile(o.NotifyDir, []byte("in the way"), 0o600); err != nil {
			t.Fatal(err)
		}
		st, _ := openStore(t, dir, nil)
		j, err := st.Create(t.Context(), cron.Spec{Cron: time.Now().Add(time.Minute).Format(time.RFC3339), Prompt: "once", Origin: o})
		if err != nil {
			t.Fatal(err)
		}
		r := &runner{}
		stop := startScheduler(t, dir, r)
		time.Sleep(90 * time.Second)
		synctest.Wait()
		if got, err := st.Get(t.Context(), j.ID); err != nil || got.Pending == nil {
			t.Fatalf("job whose report failed: %+v, %v; want its run pending", got, err)
		}
		if err := os.Remove(o.NotifyDir); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		stop()
		if ns := delivered(t, o.NotifyDir); len(ns) != 1 || ns[0].Result != "did: once" {
			t.Fatalf("reports after the queue became writable: %+v, want one", ns)
		}
		if _, err := st.Get(t.Context(), j.ID); !errors.Is(err, cron.ErrNotFound) {
			t.Errorf("job after its report: %v, want it deleted", err)
		}
	})
}

// TestSchedulersSharingRecordsKeepToTheirRuns: schedulers that run at once over the same
// records (every machine's supervisor over a team's on NATS) each leave a run another one
// claimed to it while its lease is renewed — without the lease, a second scheduler took a
// live run for a dead scheduler's and ran the tick again — and take it over once the
// scheduler that claimed it died and its lease passed; the run is reported once.
func TestSchedulersSharingRecordsKeepToTheirRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = 30 * time.Second
		dir, o := t.TempDir(), origin(t)
		st, _ := openStore(t, dir, nil)
		j, err := st.Create(t.Context(), cron.Spec{Cron: time.Now().Add(3 * time.Second).Format(time.RFC3339), Prompt: "once", Origin: o})
		if err != nil {
			t.Fatal(err)
		}
		first := &runner{block: true}
		stopFirst := startLeased(t, dir, first, lease)
		time.Sleep(4 * time.Second)
		synctest.Wait()
		second := &runner{}
		stopSecond := startLeased(t, dir, second, lease)
		time.Sleep(2 * lease) // renewed all along
		synctest.Wait()
		if got := second.runs(); len(got) != 0 {
			t.Fatalf("the second scheduler ran %v, a run the first still renews", got)
		}
		claimed, err := st.Get(t.Context(), j.ID)
		if err != nil || claimed.Pending == nil || claimed.Pending.Owner == "" || time.Since(claimed.Pending.Renewed) > lease {
			t.Fatalf("the run while the first scheduler goes: %+v, %v; want it owned and renewed", claimed.Pending, err)
		}

		stopFirst() // dies mid-run: nothing reported, the run stays the first's
		time.Sleep(lease / 2)
		synctest.Wait()
		if got := second.runs(); len(got) != 0 {
			t.Fatalf("the second scheduler ran %v before the dead one's lease passed", got)
		}
		time.Sleep(lease)
		synctest.Wait()
		stopSecond()
		want := []string{claimed.Pending.ID}
		if diff := cmp.Diff([][]string{want, want}, [][]string{first.runs(), second.runs()}); diff != "" {
			t.Errorf("runs of the first and the second scheduler, mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, taskIDs(delivered(t, o.NotifyDir))); diff != "" {
			t.Errorf("reports, mismatch (-want +got):\n%s", diff)
		}
		if _, err := st.Get(t.Context(), j.ID); !errors.Is(err, cron.ErrNotFound) {
			t.Errorf("one-shot job after its run: %v, want it deleted", err)
		}
	})
}
