package session

import (
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/team"
	"github.com/keel-dev/keel/internal/waittest"
)

// cpuHogs starts n processes that spin on a core each until the test ends.
func cpuHogs(t *testing.T, n int) {
	t.Helper()
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
		})
	}
}

// TestNoLiveMemberIsDeadUnderLoad runs the team of TestTeamLeadSpawnsTeammateThatWorksTheBoard
// with two CPU hogs competing for the cores: a heartbeat may come late, but alice runs in this
// very process, so she is never shown — in an event or in the members' list, watched all along —
// as dead.
func TestNoLiveMemberIsDeadUnderLoad(t *testing.T) {
	cpuHogs(t, 2)
	h := newHarness(t, teamScenario(), Options{Team: TeamOptions{Enabled: true, Lease: waittest.Scale(2 * time.Second), ShutdownTimeout: waittest.Timeout()}})
	var (
		mu   sync.Mutex // guards dead
		dead []string
	)
	note := func(e event.Event) {
		if s, ok := e.(event.TeammateState); ok && s.State == string(team.StateDead) {
			mu.Lock()
			dead = append(dead, "event: "+s.Name)
			mu.Unlock()
		}
	}
	h.sess.agents.SetIdleEvents(note)
	var stop atomic.Bool
	var watch sync.WaitGroup
	// The watcher looks for as long as the team runs, which under load takes longer than one
	// time limit: with one, its listings failed unnoticed after it and it saw nothing.
	ctx := t.Context()
	watch.Go(func() {
		tick := time.NewTicker(2 * time.Millisecond) //keel:duration how often the list is looked at, not a limit
		defer tick.Stop()
		for ; !stop.Load(); <-tick.C {
			members, _ := h.sess.Team().Current().Members(ctx)
			for _, m := range members {
				if m.State == team.StateDead {
					mu.Lock()
					dead = append(dead, "listed: "+m.Name)
					mu.Unlock()
				}
			}
		}
	})
	for _, e := range h.send(t, "build the thing") {
		note(e)
	}
	for _, e := range drain(t, h.sess) {
		note(e)
	}
	stop.Store(true)
	watch.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(dead) > 0 {
		t.Errorf("a live member was seen dead: %v", dead)
	}
}
