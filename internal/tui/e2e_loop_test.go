package tui_test

import (
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/waittest"
)

// TestE2ELoop: /loop runs a prompt again and again. At an interval, the run waits in the
// status line and /loop stop ends it; self-paced, runs follow each other until the model
// ends an answer with <loop-done/>; Esc during a run stops the loop.
func TestE2ELoop(t *testing.T) {
	rules := append([]scripted.Rule{
		{Name: "oven", When: scripted.Match{UserText: "check the oven"}, Reply: []scripted.Block{scripted.Text("Still baking.")}},
		{Name: "sheep", When: scripted.Match{UserText: "count the sheep"}, Times: 2, Reply: []scripted.Block{scripted.Text("Still counting.")}},
		{Name: "sheep-done", When: scripted.Match{UserText: "count the sheep"}, Reply: []scripted.Block{scripted.Text("All sheep counted.\n\n<loop-done/>")}},
	}, e2eRules...)
	srv := startScripted(t, rules...)
	tm := startKeel(t, srv, t.TempDir(), 120, 40)
	tm.waitFor("shift+tab")

	tm.command("/loop 1m check the oven")
	tm.waitFor("Still baking.")
	tm.waitFor("↻ loop every 1m · run 1")
	tm.command("/loop stop")
	if s := tm.waitFor("loop stopped after 1 run"); strings.Contains(s, "↻ loop") {
		t.Errorf("the status line still shows the loop:\n%s", s)
	}

	tm.command("/loop count the sheep")
	tm.waitFor("loop finished: the model said the work is done after 3 runs")
	if n := byRule(srv, "sheep") + byRule(srv, "sheep-done"); n != 3 {
		t.Errorf("the self-paced loop made %d runs, want 3", n)
	}

	tm.command("/loop go slowly")
	tm.waitFor("↻ loop self-paced · run 1")
	tm.keys("Escape")
	if !waittest.Poll(waittest.Context(t), func() bool { return strings.Count(tm.scrollback(), "loop stopped after 1 run") == 2 }) {
		t.Fatalf("Esc did not stop the loop:\n%s", tm.scrollback())
	}
	if s := tm.screen(); strings.Contains(s, "↻ loop") {
		t.Errorf("the status line still shows the loop:\n%s", s)
	}
	if n := byRule(srv, "oven"); n != 1 {
		t.Errorf("the stopped interval loop ran %d times, want 1", n)
	}
}

func byRule(srv *scripted.Server, name string) int {
	n := 0
	for _, r := range srv.Requests() {
		if r.Rule == name {
			n++
		}
	}
	return n
}
