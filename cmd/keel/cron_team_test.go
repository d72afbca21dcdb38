package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/coord/natscoord"
	"github.com/keel-dev/keel/internal/coord/natscoord/natstest"
	"github.com/keel-dev/keel/internal/cron"
	"github.com/keel-dev/keel/internal/daemon"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/team"
	"github.com/keel-dev/keel/internal/waittest"
)

const cronTeamSession = "5eed0000-0000-4000-8000-0000000c0a0a"

// cronTeamScenario: the lead schedules a durable recurring job on "@every <interval>", and a
// one-shot job a day ahead that ends with its session (durable false); each run answers at
// once; a lead that reads reports answers "Reports received.".
func cronTeamScenario(interval time.Duration) string {
	return fmt.Sprintf(`
rules:
  - name: drained
    when: {contains: "<task-notification>"}
    reply:
      - text: "Reports received."
  - name: cron-run
    when: {user_text: TEAM-CRON-TICK}
    reply:
      - text: "the team's weather is sunny"
  - name: schedule
    when: {user_text: schedule the team check}
    times: 1
    reply:
      - tool_search: {query: cron, found: [CronCreate]}
      - tool_use:
          name: CronCreate
          input: {cron: "@every %s", prompt: "TEAM-CRON-TICK: check the weather", recurring: true, durable: true}
      - tool_use:
          name: CronCreate
          input: {cron: %q, prompt: "TEAM-CRON-LATER: ends with the session", durable: false}
  - name: scheduled
    when: {tool_result: CronCreate}
    reply:
      - text: "Scheduled."
  - name: again
    when: {user_text: anything else}
    reply:
      - text: "Nothing else."
`, interval, time.Now().Add(24*time.Hour).Format(time.RFC3339))
}

// cronRunsOf returns the supervisor's runs of scheduled jobs, by run id.
func (r *supervisorRig) cronRunsOf(ctx context.Context) map[string]daemon.Job {
	r.t.Helper()
	st, err := r.client.Status(ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	runs := map[string]daemon.Job{}
	for _, j := range st.Jobs {
		if strings.HasPrefix(j.Agent.ID, "cron-") {
			runs[j.Agent.ID] = j
		}
	}
	return runs
}

// A job made by the lead of a team on NATS lives on NATS, not in the supervisor's records,
// and any machine's supervisor that reaches the server runs it, each tick once: machine A's
// lead schedules a recurring job (which starts A's supervisor); machine B — another keel
// home whose settings point at the same nats-server, with no session of the team — starts
// its supervisor; while both run, every tick runs in exactly one of them; once A's is
// stopped, B's runs the ticks alone. Every run is reported to the lead's inbox on NATS, and
// the lead, resumed on A, reads each report once.
func TestCronJobOfANATSTeamRunsInAnotherMachinesSupervisor(t *testing.T) {
	keel, err := exec.LookPath("keel")
	if err != nil {
		t.Fatalf("the keel command testscript installs is not on PATH: %v", err)
	}
	installKeelNATS(t, keel)
	nsrv := natstest.Start(t)
	interval := waittest.Scale(3 * time.Second).Round(time.Second)
	sc, err := scripted.ParseScenario("cron-team.yaml", []byte(cronTeamScenario(interval)))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := scripted.Start(context.Background(), "", sc, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	// The team lease is also how long a run stays its supervisor's without a renewal.
	env := map[string]string{"KEEL_NATS_URL": nsrv.URL(), "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS": "1", "KEEL_TEST_CRON_MIN_INTERVAL": "1s",
		"KEEL_TEAM_LEASE": waittest.Scale(6 * time.Second).String()}
	a := newSupervisorRigOn(t, keel, srv, env)
	b := newSupervisorRigOn(t, keel, srv, env)

	out := a.run("-p", "schedule the team check", "--session-id", cronTeamSession, "--permission-mode", "bypassPermissions")
	if !strings.Contains(out, "Scheduled.") {
		t.Fatalf("the lead did not schedule the job: %q", out)
	}
	b.run("supervisor", "start")
	if !a.client.Running() {
		t.Fatal("CronCreate did not start machine A's supervisor")
	}

	// The durable job is on NATS, in the team's records, and not in A's supervisor's; the
	// other ended with the session that made it.
	teamName := "team-" + strings.ReplaceAll(cronTeamSession, "-", "")[:8]
	// The whole run takes longer than one time limit on a loaded machine: each step has its own.
	ctx := waittest.Context(t)
	be, err := natscoord.Open(ctx, natscoord.Options{URL: nsrv.URL(), Team: teamName})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = be.Close() })
	teamJobs := cron.NewStore(be.Records(), nil)
	jobs, err := teamJobs.List(ctx)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("the team's jobs on NATS: %+v, %v", jobs, err)
	}
	id := jobs[0].ID
	if o := jobs[0].Origin; o.Team != teamName || o.Member != team.LeadAlias || o.SessionID != cronTeamSession {
		t.Errorf("the job's origin: %+v", o)
	}
	local, err := a.client.CronStore()
	if err != nil {
		t.Fatal(err)
	}
	if l, err := local.List(ctx); err != nil || len(l) != 0 {
		t.Errorf("machine A's supervisor records hold jobs: %+v, %v", l, err)
	}
	runsAtLeast := func(n int) func() bool {
		ctx := waittest.Context(t) // the limit of the wait it is the condition of
		return func() bool {
			j, err := teamJobs.Get(ctx, id)
			return err == nil && j.Runs >= n && j.Pending == nil
		}
	}

	// Both supervisors schedule the team's job.
	waittest.Until(t, "three ticks with both supervisors running", runsAtLeast(3))
	a.run("supervisor", "stop")
	ctx = waittest.Context(t)
	stopped, err := teamJobs.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	// A run A's supervisor had claimed when it stopped goes on in A's job process, which B
	// cannot see: B takes it over once its lease passes and runs it again (at least once
	// across machines when a supervisor dies mid-run). Only that tick may run in both.
	orphan := ""
	if p := stopped.Pending; p != nil {
		if _, ok := a.cronRunsOf(ctx)[p.ID]; ok {
			orphan = p.ID
			t.Logf("machine A's supervisor stopped while it ran %s; B takes it over after the lease", orphan)
		}
	}
	// B alone.
	waittest.Until(t, "two ticks with machine B's supervisor alone", runsAtLeast(stopped.Runs+2))
	// People see and delete the team's job from any machine that reaches the server.
	if listed := b.run("cron", "list", "--all"); !strings.Contains(listed, id) || !strings.Contains(listed, "team "+teamName) {
		t.Errorf("keel cron list --all on machine B does not show the team's job:\n%s", listed)
	}
	if out := b.run("cron", "delete", id); !strings.Contains(out, "deleted scheduled job "+id) {
		t.Errorf("keel cron delete on machine B: %q", out)
	}
	if _, err := teamJobs.Get(waittest.Context(t), id); !errors.Is(err, cron.ErrNotFound) {
		t.Errorf("the team's job after keel cron delete: %v", err)
	}
	var byA, byB map[string]daemon.Job
	ctx = waittest.Context(t)
	waittest.Until(t, "every run to end and be reported", func() bool {
		byA, byB = a.cronRunsOf(ctx), b.cronRunsOf(ctx)
		msgs, err := be.Mailbox().Fetch(ctx, team.LeadAlias, 0)
		runs := len(byA) + len(byB)
		if _, ok := byB[orphan]; ok {
			runs-- // one report for the tick both ran
		}
		return err == nil && len(msgs) == runs
	})
	all := map[string]daemon.Job{}
	for run, j := range byA {
		all[run] = j
	}
	afterStop := 0
	for run, j := range byB {
		if _, ok := byA[run]; ok && run != orphan {
			t.Errorf("tick %s ran in both supervisors", run)
		}
		all[run] = j
		if j.Created.After(stopped.LastTick) {
			afterStop++
		}
	}
	for run, j := range all {
		if j.State != daemon.StateCompleted || j.Attempts != 1 || !strings.Contains(j.Result, "sunny") {
			t.Errorf("run %s: %s after %d attempts (%q); want completed at its first", run, j.State, j.Attempts, j.Result)
		}
	}
	if afterStop < 2 {
		t.Errorf("machine B's supervisor ran %d ticks after A's stopped, want at least 2", afterStop)
	}
	if n := countRequests(a, "cron-run"); n != len(byA)+len(byB) {
		t.Errorf("the job's prompt ran %d times for %d ticks", n, len(all))
	}
	msgs, err := be.Mailbox().Fetch(waittest.Context(t), team.LeadAlias, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if _, ok := all[m.ID]; !ok || m.From != cron.From {
			t.Errorf("the lead's inbox holds %s from %s, no run's report", m.ID, m.From)
		}
	}

	// The lead, resumed on machine A, reads every report once.
	out = a.run("--resume", cronTeamSession, "-p", "anything else")
	if !strings.Contains(out, "Reports received.") {
		t.Errorf("the resumed lead did not get the reports: %q", out)
	}
	a.run("--resume", cronTeamSession, "-p", "anything else")
	for run := range all {
		if n := a.transcriptCount(cronTeamSession, run); n != 1 {
			t.Errorf("the report of %s is in the lead's transcript %d times, want 1", run, n)
		}
	}
	t.Logf("interval %v: %d ticks run, %d by machine A's supervisor and %d by B's (%d after A's stopped); none by both",
		interval, len(all), len(byA), len(byB), afterStop)
}
