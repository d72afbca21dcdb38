package session

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/buildtest"
	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/natscoord/natstest"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/team"
	"github.com/keel-dev/keel/internal/waittest"
)

// thrashScenario: the lead spawns bob; bob cannot finish task 1 whatever he is told — the
// model a stalled teammate's task meets when it needs what only that teammate has.
func thrashScenario() *scripted.Scenario {
	bob := func(m scripted.Match) scripted.Match { m.System = mateIs("bob").System; return m }
	return &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "bob starts", When: bob(scripted.Match{UserText: "help with the board"}), Reply: []scripted.Block{scripted.Text("ready")}},
		{Name: "bob tries", When: bob(scripted.Match{UserText: `<task-assignment id="1"`}), Reply: []scripted.Block{scripted.Text("I cannot finish this without carol")}},
		{Name: "bob reminded", When: bob(scripted.Match{UserText: `<task-reminder id="1"`}), Reply: []scripted.Block{scripted.Text("still cannot")}},
		{Name: "bob other", When: bob(scripted.Match{}), Reply: []scripted.Block{scripted.Text("noted")}},
		{Name: "lead told", When: leadTurn(scripted.Match{Contains: "contested"}), Reply: []scripted.Block{scripted.Text("I will look at task 1")}},
		{Name: "lead spawns", When: leadTurn(scripted.Match{UserText: "get help"}), Reply: []scripted.Block{
			scripted.ToolUse("Agent", map[string]any{"description": "helper", "prompt": "help with the board", "name": "bob"})}},
		{Name: "lead waits", When: leadTurn(scripted.Match{ToolResult: "Agent"}), Reply: []scripted.Block{scripted.Text("bob is on it")}},
	}, Fallback: &scripted.Rule{Reply: []scripted.Block{scripted.Text("ok")}}}
}

// TestStalledTeammateDoesNotMakeTheOtherThrash: carol holds task 1 and stops (SIGSTOP: her
// process lives, her lease is not renewed). Once the lease lapsed bob takes the task over but
// cannot finish it; he gives it back, stays off it for a backoff, and after the third time the
// task is contested and the lead is told — once. Over the whole scenario bob makes a handful
// of requests (the thrash made one per release, hundreds a minute), on both backends.
func TestStalledTeammateDoesNotMakeTheOtherThrash(t *testing.T) {
	for _, backend := range []string{"files", "nats"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			var opts Options
			if backend == "nats" {
				opts.Coordination = CoordinationOptions{NATSURL: natstest.Start(t).URL(), NATSBinary: buildtest.Companion(t, "keel-nats")}
			}
			opts.Team = TeamOptions{Enabled: true, Lease: waittest.Scale(time.Second), ShutdownTimeout: waittest.Timeout()}
			h := newHarness(t, thrashScenario(), opts)
			if got := fmt.Sprintf("%T", h.sess.Team().Current().Backend()); !strings.Contains(got, map[string]string{"files": "fscoord", "nats": "coordpipe"}[backend]) {
				t.Fatalf("the team runs on %s", got)
			}
			thrash(t, h)
		})
	}
}

func thrash(t *testing.T, h *harness) {
	ctx := waittest.Context(t)
	be := h.sess.Team().Current().Backend()
	stalledOwner(t, ctx, be, "carol")

	if r := result(t, h.send(t, "get help")); r.Text != "bob is on it" {
		t.Fatalf("the lead's turn: %+v", r)
	}
	// Each step has its own time limit from here: the whole test takes longer than one on a
	// loaded machine.
	ctx = waittest.Context(t)
	bobRequests := func() int {
		n := 0
		for _, r := range h.srv.Requests() {
			if strings.HasPrefix(r.Rule, "bob") {
				n++
			}
		}
		return n
	}
	waittest.Until(t, "task 1 to be contested", func() bool {
		tk, err := be.Board().Get(ctx, "1")
		return err == nil && coord.Contested(tk)
	})
	atContested := bobRequests()
	// A thrashing member would go on taking the task: give it the time of the longest
	// backoff to show.
	window, cancel := context.WithTimeout(t.Context(), waittest.Scale(3*coord.ReleaseBackoff(coord.ContestedAfter)))
	defer cancel()
	if waittest.Poll(window, func() bool { return bobRequests() > atContested }) {
		t.Errorf("bob took the contested task again: %d requests, %d when it became contested", bobRequests(), atContested)
	}
	// bob's first turn, the first attempt and its reminder, then one attempt after each of
	// the two backoffs: 5. The thrash made one more per release, without end.
	if n := bobRequests(); n > 5 {
		t.Errorf("bob made %d requests; want at most 5", n)
	}
	t.Logf("bob's requests: %d (1 to start, 4 on the task he could not finish)", bobRequests())
	// The lead hears of it once: its turn for what waits reads one contested report.
	ctx = waittest.Context(t)
	waittest.Until(t, "the lead to be told", func() bool { return h.sess.Team().LeadUnread(ctx) > 0 })
	for range h.sess.agents.SendPending(waittest.Context(t)) {
	}
	reports := 0
	for _, r := range h.srv.Requests() {
		if r.Rule == "lead told" {
			reports = strings.Count(string(r.Body), "went back to the board")
		}
	}
	if reports != 1 {
		t.Errorf("the lead's last request carries %d contested reports, want 1", reports)
	}
}

// stalledOwner makes name a member whose process lives but is stopped, holding task 1 under
// a lease it will not renew.
func stalledOwner(t *testing.T, ctx context.Context, be coord.Backend, name string) {
	t.Helper()
	sleeper := exec.Command("sleep", "600")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	if err := sleeper.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if _, err := be.Board().Create(ctx, coord.Task{Subject: "fix the build"}); err != nil {
		t.Fatal(err)
	}
	if _, err := be.Board().Claim(ctx, "1", name, waittest.Scale(time.Second)); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	rec, _ := json.Marshal(team.Record{ID: "a0000000000000001", Name: name, Runner: team.RunnerProcess, State: team.StateWorking, Task: "1",
		PID: sleeper.Process.Pid, Host: host, Heartbeat: time.Now(), Started: time.Now()})
	if _, err := be.Records().Put(ctx, "members/"+name, rec); err != nil {
		t.Fatal(err)
	}
}
