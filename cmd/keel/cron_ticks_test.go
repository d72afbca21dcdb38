package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/cron"
	"github.com/keel-dev/keel/internal/daemon"
	"github.com/keel-dev/keel/internal/waittest"
)

// cronTicksScenario schedules a durable recurring job on "@every <interval>"; each run
// answers at once.
func cronTicksScenario(interval time.Duration) string {
	return fmt.Sprintf(`
rules:
  - name: drained
    when: {contains: "<task-notification>"}
    reply:
      - text: "Reports received."
  - name: cron-run
    when: {user_text: CRON-TICK}
    reply:
      - text: "tick counted"
  - name: schedule
    when: {user_text: schedule the ticks}
    times: 1
    reply:
      - tool_search: {query: cron, found: [CronCreate]}
      - tool_use:
          name: CronCreate
          input: {cron: "@every %s", prompt: "CRON-TICK: count the ticks", recurring: true, durable: true}
  - name: scheduled
    when: {tool_result: CronCreate}
    reply:
      - text: "Scheduled."
  - name: again
    when: {user_text: anything else}
    reply:
      - text: "Nothing else."
`, interval)
}

// cronRuns returns the supervisor jobs that ran ticks of scheduled job id, by tick.
func (r *supervisorRig) cronRuns(ctx context.Context, id string) map[time.Time]daemon.Job {
	r.t.Helper()
	st, err := r.client.Status(ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	runs := map[time.Time]daemon.Job{}
	for _, j := range st.Jobs {
		unix, ok := strings.CutPrefix(j.Agent.ID, "cron-"+id+"-")
		if !ok {
			continue
		}
		sec, err := strconv.ParseInt(unix, 10, 64)
		if err != nil {
			r.t.Fatalf("run id %q: %v", j.Agent.ID, err)
		}
		runs[time.Unix(sec, 0)] = j
	}
	return runs
}

// The done-when of a recurring job: it ticks in the supervisor with no keel window open, the
// supervisor is SIGKILLed between two ticks, ticks pass while none runs (nothing runs them),
// a new supervisor takes over, and it runs the missed ticks once — its report says how many
// were missed — while every tick that ran, ran exactly once: one supervisor job per tick,
// each completed at its first attempt, one model conversation per run, one report per run
// in the session's transcript.
//
// The interval is seconds long through the test-only KEEL_TEST_CRON_MIN_INTERVAL (the
// session's runconfig.Config.CronMinInterval); waits are on the job's record and the
// supervisor's, and on the clock passing a tick.
func TestCronRecurringJobSurvivesSupervisorKilledBetweenTicks(t *testing.T) {
	interval := waittest.Scale(4 * time.Second).Round(time.Second)
	r := newSupervisorRigWith(t, cronTicksScenario(interval))
	r.env = append(r.env, "KEEL_TEST_CRON_MIN_INTERVAL=1s")
	out := r.run("-p", "schedule the ticks", "--permission-mode", "bypassPermissions")
	if !strings.Contains(out, "Scheduled.") {
		t.Fatalf("keel -p did not schedule the job: %q", out)
	}
	paths, _ := filepath.Glob(filepath.Join(r.home, "projects", "*", "*.jsonl"))
	if len(paths) != 1 {
		t.Fatalf("transcripts: %v", paths)
	}
	session := strings.TrimSuffix(filepath.Base(paths[0]), ".jsonl")
	// ctx is the time limit of one step, renewed at each (get reads it when called): the whole
	// run takes longer than one on a loaded machine.
	ctx := waittest.Context(t)
	store, err := r.client.CronStore()
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := store.List(ctx)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("scheduled jobs: %+v, %v", jobs, err)
	}
	id := jobs[0].ID
	get := func() cron.Job {
		j, err := store.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}

	// Tick after tick until the supervisor is killed with no run pending: a kill that lands
	// while a tick runs (a loaded machine) is the one-shot test's case; start another
	// supervisor and try at the next gap.
	var before cron.Job
	for attempt := 1; ; attempt++ {
		ctx = waittest.Context(t)
		runs := get().Runs
		waittest.Until(t, "a tick to run and report", func() bool { j := get(); return j.Runs > runs && j.Pending == nil })
		ctx = waittest.Context(t)
		st, err := r.client.Status(ctx)
		if err != nil || st.Info == nil {
			t.Fatalf("supervisor status: %+v, %v", st, err)
		}
		if err := syscall.Kill(st.Info.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waittest.Until(t, "the killed supervisor to be gone", func() bool { return !r.client.Running() })
		ctx = waittest.Context(t)
		if before = get(); before.Pending == nil {
			break
		}
		if attempt == 3 {
			t.Fatalf("the supervisor was killed mid-run %d times; the interval %v leaves no gap on this machine", attempt, interval)
		}
		t.Logf("attempt %d: the kill landed while tick %v ran; again", attempt, before.Pending.Tick)
		r.run("supervisor", "start")
	}
	ctx = waittest.Context(t)
	runsBefore := r.cronRuns(ctx, id)

	// Two ticks pass with no supervisor: nothing claims or runs them.
	sched, err := before.Schedule()
	if err != nil {
		t.Fatal(err)
	}
	missed1 := sched.Next(before.LastTick)
	missed2 := sched.Next(missed1)
	waittest.Until(t, "two ticks to pass with no supervisor", func() bool { return time.Now().After(missed2) })
	ctx = waittest.Context(t)
	if j := get(); j.Runs != before.Runs || j.Pending != nil || !j.LastTick.Equal(before.LastTick) {
		t.Fatalf("the job moved with no supervisor running: %+v, was %+v", j, before)
	}

	// A new supervisor takes over and runs what was missed once.
	r.run("supervisor", "start")
	ctx = waittest.Context(t)
	waittest.Until(t, "the new supervisor to run the missed ticks", func() bool {
		j := get()
		return j.Runs > before.Runs && j.Pending == nil
	})
	// No more ticks: a run that is going when the job is deleted still finishes and reports.
	r.run("cron", "delete", id)
	ctx = waittest.Context(t)
	waittest.Until(t, "every run of the job to end", func() bool {
		for _, j := range r.cronRuns(ctx, id) {
			if !j.State.Terminal() || !j.Delivered {
				return false
			}
		}
		return true
	})
	runs := r.cronRuns(waittest.Context(t), id)
	var ticks []time.Time
	for tick, j := range runs {
		ticks = append(ticks, tick)
		if j.State != daemon.StateCompleted || j.Attempts != 1 || !strings.Contains(j.Result, "tick counted") {
			t.Errorf("the run of tick %v: %s after %d attempts (%q); want completed at its first", tick, j.State, j.Attempts, j.Result)
		}
		if tick.After(before.LastTick) && tick.Before(missed2) {
			t.Errorf("tick %v, passed while no supervisor ran, was run on its own", tick)
		}
	}
	takeover := time.Time{}
	for tick := range runs {
		if tick.After(before.LastTick) && (takeover.IsZero() || tick.Before(takeover)) {
			takeover = tick
		}
	}
	if takeover.Before(missed2) {
		t.Fatalf("the first run after the restart is for tick %v, before the missed tick %v", takeover, missed2)
	}
	if len(runsBefore) != before.Runs {
		t.Errorf("before the kill: %d runs recorded by the job, %d supervisor jobs", before.Runs, len(runsBefore))
	}
	// One model conversation per run: no tick started twice.
	if n := countRequests(r, "cron-run"); n != len(runs) {
		t.Errorf("%d conversations ran the job's prompt for %d ticks %v", n, len(runs), ticks)
	}

	out = r.run("--resume", session, "-p", "anything else")
	if !strings.Contains(out, "Reports received.") {
		t.Errorf("the resumed session did not get the reports: %q", out)
	}
	r.run("--resume", session, "-p", "anything else")
	for tick, j := range runs {
		if n := r.transcriptCount(session, j.Agent.ID); n != 1 {
			t.Errorf("the report of tick %v is in the session's transcript %d times, want 1", tick, n)
		}
	}
	b := r.transcript(session)
	missedSaid := "did not run (the keel supervisor was not running"
	if !strings.Contains(b, missedSaid) || !strings.Contains(b, missed1.Format(time.RFC3339)) {
		t.Errorf("no report says the ticks from %v were missed:\n%s", missed1, b)
	}
	t.Logf("interval %v; %d ticks run: %d before the kill, the takeover's at %v (missed from %v); %d conversations",
		interval, len(runs), len(runsBefore), takeover.Format(time.TimeOnly), missed1.Format(time.TimeOnly), countRequests(r, "cron-run"))
}

// countRequests counts the requests the rig's scripted model answered with rule, retries
// left out.
func countRequests(r *supervisorRig, rule string) int {
	n := 0
	for _, req := range r.srv.Requests() {
		if req.Rule == rule && req.Attempt == 1 {
			n++
		}
	}
	return n
}

// transcript returns the session's transcript.
func (r *supervisorRig) transcript(session string) string {
	r.t.Helper()
	paths, _ := filepath.Glob(filepath.Join(r.home, "projects", "*", session+".jsonl"))
	if len(paths) != 1 {
		r.t.Fatalf("transcript of session %s: found %v", session, paths)
	}
	b, err := os.ReadFile(paths[0])
	if err != nil {
		r.t.Fatal(err)
	}
	return string(b)
}
