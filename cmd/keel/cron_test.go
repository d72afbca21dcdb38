package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/daemon"
	"github.com/keel-dev/keel/internal/waittest"
)

// cronScenario schedules a durable one-shot job at the given time; its run (CRON-TASK) takes
// a moment, so the test can kill the supervisor while it goes.
func cronScenario(at string) string {
	return fmt.Sprintf(`
rules:
  - name: drained
    when: {contains: "<task-notification>"}
    reply:
      - text: "Report received."
  - name: cron-run
    when: {user_text: CRON-TASK}
    fault: {delay: 3s}
    reply:
      - text: "the weather is sunny"
  - name: schedule
    when: {user_text: schedule the check}
    times: 1
    reply:
      - tool_search: {query: cron, found: [CronCreate]}
      - tool_use:
          name: CronCreate
          input: {cron: %q, prompt: "CRON-TASK: check the weather", recurring: false, durable: true}
  - name: scheduled
    when: {tool_result: CronCreate}
    reply:
      - text: "Scheduled."
  - name: again
    when: {user_text: anything else}
    reply:
      - text: "Nothing else."
`, at)
}

// A job scheduled a few seconds ahead by a keel -p that has exited (no keel window open) runs
// in the supervisor; the supervisor is SIGKILLed while the run goes, the next keel session
// starts a new one, and the run is neither started twice nor reported twice: the resumed
// session gets its report once.
func TestCronJobRunsWithNoWindowOpen(t *testing.T) {
	if keel, err := exec.LookPath("keel"); err == nil {
		installKeelNATS(t, keel) // built before the clock starts: it takes a while
	}
	at := time.Now().Add(waittest.Scale(5 * time.Second)).UTC().Format(time.RFC3339)
	r := newSupervisorRigWith(t, cronScenario(at))
	out := r.run("-p", "schedule the check", "--permission-mode", "bypassPermissions", "--output-format", "stream-json", "--verbose")
	if !strings.Contains(out, "Scheduled.") {
		t.Fatalf("keel -p did not schedule the job: %q", out)
	}
	paths, _ := filepath.Glob(filepath.Join(r.home, "projects", "*", "*.jsonl"))
	if len(paths) != 1 {
		t.Fatalf("transcripts: %v", paths)
	}
	session := strings.TrimSuffix(filepath.Base(paths[0]), ".jsonl")
	listed := r.run("cron", "list")
	if !strings.Contains(listed, "CRON-TASK: check the weather") {
		t.Fatalf("keel cron list does not show the job: %q\n%s", listed, out)
	}

	// The run starts with no keel window open; the supervisor dies while it goes.
	// ctx is the time limit of one step, renewed at each: the whole run takes longer than one
	// on a loaded machine.
	ctx := waittest.Context(t)
	var run daemon.Job
	// Started means its process holds the job (its pid recorded under the job's lock): killed
	// before that, the supervisor dies with a run nobody holds, which the next one starts again
	// as a second attempt.
	waittest.Until(t, "the scheduled run's process to start", func() bool {
		st, err := r.client.Status(ctx)
		if err != nil {
			return false
		}
		for _, j := range st.Jobs {
			if strings.HasPrefix(j.Agent.ID, "cron-") && j.State == daemon.StateRunning && j.PID > 0 {
				run = j
				return true
			}
		}
		return false
	})
	st, err := r.client.Status(ctx)
	if err != nil || st.Info == nil {
		t.Fatalf("supervisor status: %+v, %v", st, err)
	}
	if err := syscall.Kill(st.Info.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waittest.Until(t, "the killed supervisor to be gone", func() bool { return !r.client.Running() })
	ctx = waittest.Context(t)
	// As after a reboot: the next keel session, in any project, finds jobs and starts a
	// supervisor, whose scheduler takes over the run the killed one left.
	store, err := r.client.CronStore()
	if err != nil {
		t.Fatal(err)
	}
	left, err := store.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r.run("-p", "anything else")
	if len(left) > 0 && !r.client.Running() {
		t.Fatal("a session that found scheduled jobs did not start the supervisor")
	}
	if len(left) == 0 {
		t.Log("the run finished before the supervisor was killed (a loaded machine); the kill tested nothing mid-run")
		r.run("supervisor", "start")
	}
	ctx = waittest.Context(t)
	waittest.Until(t, "the one-shot job to run, report and end", func() bool {
		jobs, err := store.List(ctx)
		return err == nil && len(jobs) == 0
	})
	st, err = r.client.Status(waittest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	var runs []daemon.Job
	for _, j := range st.Jobs {
		if strings.HasPrefix(j.Agent.ID, "cron-") {
			runs = append(runs, j)
		}
	}
	if len(runs) != 1 || runs[0].Agent.ID != run.Agent.ID || runs[0].Attempts != 1 || runs[0].State != daemon.StateCompleted ||
		!strings.Contains(runs[0].Result, "sunny") {
		t.Fatalf("runs of the job: %+v; want one, completed at its first attempt", runs)
	}

	out = r.run("--resume", session, "-p", "anything else")
	if !strings.Contains(out, "Report received.") {
		t.Errorf("the resumed session did not get the report: %q", out)
	}
	if n := r.transcriptCount(session, run.Agent.ID); n != 1 {
		t.Errorf("the run's report is in the session's transcript %d times, want 1", n)
	}
	if _, err := os.Stat(r.home); err != nil {
		t.Fatal(err)
	}
}
