package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/coord/fscoord"
	"github.com/keel-dev/keel/internal/fanout"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/waittest"
)

const fanoutSession = "5eed0000-0000-4000-8000-0000000fa000"

// fanoutKillScenario: the main thread calls Agent with items; the first `quick` item
// answers come at once, the next `held` are held until the test ends (the process is
// SIGKILLed while they wait), and every later one — the resumed run's — answers at once.
func fanoutKillScenario(items []string, quick, held int, hold <-chan struct{}) *scripted.Scenario {
	agent := []scripted.Block{scripted.ToolUse("Agent", map[string]any{"description": "check files",
		"prompt": "Check the file named below and answer with one word.\n\nFile: {{item}}", "subagent_type": "general-purpose", "items": items})}
	fine := []scripted.Block{scripted.Text("fine")}
	return &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "fan out", When: scripted.Match{UserText: "check all"}, Times: 1, Reply: agent},
		{Name: "fan out again", When: scripted.Match{UserText: "go on"}, Times: 1, Reply: agent},
		{Name: "item", When: scripted.Match{UserText: "ITEM-"}, Times: quick, Reply: fine},
		{Name: "held", When: scripted.Match{UserText: "ITEM-"}, Times: held, Reply: fine, Fault: &scripted.Fault{Hold: hold}},
		{Name: "item after", When: scripted.Match{UserText: "ITEM-"}, Reply: fine},
		{Name: "summary", When: scripted.Match{ToolResult: "Agent"}, Reply: []scripted.Block{scripted.Text("all checked")}},
	}}
}

// ledgerItems reads the ledger of the one fan-out of session under home.
func ledgerItems(t *testing.T, home, session string) []fanout.Item {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(home, "projects", "*", session, "fanouts", "*"))
	if len(dirs) != 1 {
		t.Fatalf("fan-out ledgers of session %s: %v", session, dirs)
	}
	b, err := fscoord.Open(dirs[0], fscoord.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	items, err := fanout.Items(waittest.Context(t), b.Board())
	if err != nil {
		t.Fatal(err)
	}
	return items
}

// The done-when of a fan-out, at process level: keel -p fans 50 items out with a cap of 5
// (KEEL_MAX_CONCURRENT_SUBAGENTS) and is SIGKILLed once 25 items are done and 5 are waiting
// for their model; `keel --resume` asks for the same fan-out, and the ledger is repaired —
// the 5 items the dead run held run again at once, the 25 done never run again, the 20 never
// started run once — so every item ends done, each item finished before the kill having run
// exactly once. The figure is the cache-read share of siblings 2..N of both runs.
func TestFanOutKilledMidRunResumes(t *testing.T) {
	const n, quick, capacity = 50, 25, 5
	var items []string
	for i := 1; i <= n; i++ {
		items = append(items, fmt.Sprintf("ITEM-%03d", i))
	}
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	srv, err := scripted.Start(t.Context(), "", fanoutKillScenario(items, quick, capacity, hold), scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	home, cwd := t.TempDir(), t.TempDir()
	env := append(os.Environ(), "KEEL_HOME="+home, "HOME="+t.TempDir(), "ANTHROPIC_BASE_URL="+srv.URL(), "ANTHROPIC_API_KEY=test-key",
		fmt.Sprintf("KEEL_MAX_CONCURRENT_SUBAGENTS=%d", capacity))
	// keel builds a command living as long as ctx: the killed run lives on the test's context
	// (killWhen limits its wait), the resumed one, expected to finish, has one time limit.
	keel := func(ctx context.Context, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, "keel", args...)
		cmd.Env, cmd.Dir = env, cwd
		return cmd
	}
	rules := func(from int, names ...string) []scripted.Recorded {
		var out []scripted.Recorded
		for _, r := range srv.Requests()[from:] {
			for _, name := range names {
				if r.Rule == name {
					out = append(out, r)
				}
			}
		}
		return out
	}

	// With every worker on a held item, the items before them have their results recorded
	// (a worker records its item before it claims the next).
	killWhen(t, keel(t.Context(), "-p", "check all", "--session-id", fanoutSession, "--permission-mode", "bypassPermissions"),
		"the cap of items to wait on their model", func() bool { return len(rules(0, "held")) == capacity })
	killedAt := len(srv.Requests())
	states := map[fanout.State][]string{}
	for _, it := range ledgerItems(t, home, fanoutSession) {
		states[it.State] = append(states[it.State], it.Input)
	}
	if len(states[fanout.StateDone]) != quick || len(states[fanout.StateRunning]) != capacity || len(states[fanout.StatePending]) != n-quick-capacity {
		t.Fatalf("the ledger at the kill: %d done, %d running, %d pending; want %d, %d, %d",
			len(states[fanout.StateDone]), len(states[fanout.StateRunning]), len(states[fanout.StatePending]), quick, capacity, n-quick-capacity)
	}

	res, err := keel(waittest.Context(t), "--resume", fanoutSession, "-p", "go on", "--permission-mode", "bypassPermissions").CombinedOutput()
	if err != nil || !strings.Contains(string(res), "all checked") {
		t.Fatalf("the resumed run: %v\n%s", err, res)
	}
	final := ledgerItems(t, home, fanoutSession)
	runs := map[string]int{}
	for _, r := range rules(0, "item", "held", "item after") {
		for _, it := range items {
			if strings.Contains(string(r.Body), it) {
				runs[it]++
			}
		}
	}
	for _, it := range final {
		if it.State != fanout.StateDone || it.Result != "fine" {
			t.Errorf("item %d (%s) ended %s with %q", it.Index, it.Input, it.State, it.Result)
		}
	}
	attempts := map[string]int{}
	for _, it := range final {
		attempts[it.Input] = it.Attempts
	}
	for state, want := range map[fanout.State]int{fanout.StateDone: 1, fanout.StateRunning: 2, fanout.StatePending: 1} {
		for _, it := range states[state] {
			if runs[it] != want || attempts[it] != want {
				t.Errorf("%s, %s at the kill, ran %d times (the ledger counts %d attempts); want %d", it, state, runs[it], attempts[it], want)
			}
		}
	}
	summary := rules(killedAt, "summary")
	if len(summary) != 1 || !strings.Contains(string(summary[0].Body), "Fan-out of 50 items: 50 done, 0 failed") {
		t.Errorf("the resumed Agent call's answer is not the whole fan-out's summary: %d summary requests", len(summary))
	}

	// Siblings 2..N of each run: the first item of each run writes the cache.
	var read, total int
	for _, part := range [][]scripted.Recorded{rules(0, "item", "held")[1:], rules(killedAt, "item after")[1:]} {
		for _, r := range part {
			read += r.Cache.CacheReadTokens
			total += r.Cache.InputTokens
		}
	}
	share := float64(read) / float64(total)
	t.Logf("figure: keel -p fan-out of %d items, cap %d, SIGKILLed at %d done and %d running, resumed: siblings 2..N read %d of %d input tokens from the cache (share %.4f)",
		n, capacity, quick, capacity, read, total, share)
	if share < 0.99 {
		t.Errorf("siblings' cache read share %.4f, want at least 0.99", share)
	}
}
