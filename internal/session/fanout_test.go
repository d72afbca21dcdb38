package session

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/fanout"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

// TestFanOutResumesAndSharesTheCache: a fan-out of 50 items with a cap of 5 is cut off
// half-way and started again in the resumed session: every item ends done, the items
// finished before the cut are never run again, and the report gives the cache-read share
// of the siblings' requests (items 2..N).
func TestFanOutResumesAndSharesTheCache(t *testing.T) {
	for _, fork := range []bool{false, true} {
		t.Run(fmt.Sprintf("fork=%v", fork), func(t *testing.T) { testFanOut(t, fork) })
	}
}

func testFanOut(t *testing.T, fork bool) {
	const n, cut = 50, 25
	var items []string
	for i := 1; i <= n; i++ {
		items = append(items, fmt.Sprintf("ITEM-%03d", i))
	}
	spec := FanOutSpec{Description: "check", Prompt: "Check the file named below and answer with one word.\n\nFile: {{item}}", Items: items, Concurrency: 5, Fork: fork}
	sc := &scripted.Scenario{Rules: []scripted.Rule{{When: scripted.Match{UserText: "ITEM-"}, Reply: []scripted.Block{scripted.Text("fine")}}}}
	home := t.TempDir()
	h := newHarness(t, sc, Options{Home: home})
	h.send(t, "hello") // the session's transcript exists from its first prompt

	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		_, _ = h.srv.WaitRequests(ctx, 1+cut)
		cancel()
	}()
	first, err := h.sess.FanOuts().Run(ctx, spec)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if first.Done == n || first.Done == 0 {
		t.Fatalf("the cut fan-out finished %d of %d items; the test wants it cut half-way", first.Done, n)
	}
	doneBefore := map[string]bool{}
	for _, it := range first.Items {
		if it.State == fanout.StateDone {
			doneBefore[it.Input] = true
		}
	}
	id := h.sess.ID()
	cwd := h.sess.opts.Cwd
	if err := h.sess.Close(); err != nil {
		t.Fatal(err)
	}

	resumedAt := len(h.srv.Requests())
	h2 := newHarnessOn(t, h.srv, Options{Home: home, Cwd: cwd, Resume: id})
	h2.send(t, "go on") // forks branch off a turn of the main thread
	sum, err := h2.sess.FanOuts().Run(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Done != n {
		t.Fatalf("after the resume %d of %d items are done:\n%s", sum.Done, n, sum.Text())
	}
	runs := map[string]int{}
	// Each run's first item writes the cache (the resumed run's also writes the turn it
	// branches off); siblings 2..N of each run are measured.
	var read, total int
	var siblings []scripted.Recorded
	firstOfRun := map[bool]bool{}
	for i, r := range h.srv.Requests() {
		body := string(r.Body)
		for _, it := range items {
			if strings.Contains(body, it) {
				runs[it]++
			}
		}
		if !strings.Contains(body, "ITEM-") {
			continue
		}
		// A request the cut cancelled may be recorded after the resume began; a fork child
		// of the resumed run is known by the turn it branches off.
		run := i >= resumedAt
		if fork {
			run = strings.Contains(body, "go on")
		}
		if !firstOfRun[run] {
			firstOfRun[run] = true
			continue
		}
		read += r.Cache.CacheReadTokens
		total += r.Cache.InputTokens
		siblings = append(siblings, r)
	}
	for _, it := range items {
		if doneBefore[it] && runs[it] != 1 {
			t.Errorf("%s finished before the cut but ran %d times", it, runs[it])
		}
		if runs[it] == 0 {
			t.Errorf("%s never ran", it)
		}
	}
	share := float64(read) / float64(total)
	t.Logf("figure: fan-out of %d items (fork %v), cap 5, cut after %d done and resumed: siblings 2..N read %d of %d input tokens from the cache (share %.4f)",
		n, fork, len(doneBefore), read, total, share)
	if want := map[bool]float64{false: 0.99, true: 0.99}[fork]; share < want {
		t.Errorf("siblings' cache read share %.4f", share)
		for _, r := range siblings {
			t.Logf("request %d: %d of %d input tokens read from the cache, %d written", r.N, r.Cache.CacheReadTokens, r.Cache.InputTokens, r.Cache.CacheCreationTokens)
		}
		worst := siblings[0]
		for _, r := range siblings {
			if r.Cache.InputTokens-r.Cache.CacheReadTokens > worst.Cache.InputTokens-worst.Cache.CacheReadTokens {
				worst = r
			}
		}
		t.Logf("the request that read least (%d):\n%s", worst.N, worst.Body)
	}
	if it, err := h2.sess.FanOuts().Item(t.Context(), spec, 7); err != nil || it.Result != "fine" {
		t.Errorf("item 7's result: %+v, %v", it, err)
	}
}

// TestAgentToolFansOut: an Agent call with items runs one agent per item and answers with
// one summary.
func TestAgentToolFansOut(t *testing.T) {
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "check all"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Agent", map[string]any{
			"description": "check files", "prompt": "Check {{item}}", "subagent_type": "general-purpose", "items": []string{"a.go", "b.go", "c.go"}})}},
		{When: scripted.Match{UserText: "Check "}, Reply: []scripted.Block{scripted.Text("looks fine")}},
		{When: scripted.Match{ToolResult: "Agent"}, Reply: []scripted.Block{scripted.Text("all checked")}},
	}}
	h := newHarness(t, sc, Options{Home: t.TempDir(), PermissionMode: "bypassPermissions"})
	h.send(t, "check all")
	res := allToolResults(h)
	if !strings.Contains(res, "Fan-out of 3 items: 3 done, 0 failed") || !strings.Contains(res, "## 2. b.go\nlooks fine") {
		t.Errorf("Agent with items answered %q", res)
	}
}

// TestTaskOutputReadsAFanOutItem: when the items' whole results do not fit in the Agent
// call's answer, it names the ids TaskOutput takes, and TaskOutput with one returns that
// item's whole result; an id of no fan-out is a clear error.
func TestTaskOutputReadsAFanOutItem(t *testing.T) {
	items := []string{"a.go", "b.go", "c.go"}
	long := func(it string) string {
		return "report on " + it + "\n" + strings.Repeat("detail line\n", 1200) + "END OF " + it
	}
	key := FanOutSpec{Prompt: "Check {{item}}", Items: items, AgentType: "general-purpose"}.ledgerKey()
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "check all"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Agent", map[string]any{
			"description": "check files", "prompt": "Check {{item}}", "subagent_type": "general-purpose", "items": items})}},
		{When: scripted.Match{ToolResult: "Agent"}, Reply: []scripted.Block{scripted.ToolUse("TaskOutput", map[string]any{"task_id": "fanout-" + key + "/2"})}},
		{When: scripted.Match{UserText: "unknown item"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("TaskOutput", map[string]any{"task_id": "fanout-0123456789abcdef/1"})}},
		{When: scripted.Match{ToolResult: "TaskOutput"}, Reply: []scripted.Block{scripted.Text("read it")}},
		// An item's prompt reaches the model as the shared head and the item in two blocks.
		{When: scripted.Match{UserText: "a.go"}, Reply: []scripted.Block{scripted.Text(long("a.go"))}},
		{When: scripted.Match{UserText: "b.go"}, Reply: []scripted.Block{scripted.Text(long("b.go"))}},
		{When: scripted.Match{UserText: "c.go"}, Reply: []scripted.Block{scripted.Text(long("c.go"))}},
	}}
	h := newHarness(t, sc, Options{Home: t.TempDir(), PermissionMode: "bypassPermissions"})
	h.send(t, "check all")
	res := allToolResults(h)
	if !strings.Contains(res, `TaskOutput with task_id "fanout-`+key+`/N"`) {
		t.Errorf("the cut summary does not say how to read an item: %q", res[:min(len(res), 2000)])
	}
	if !strings.Contains(res, "Item 2 (b.go), done:\n"+long("b.go")) {
		t.Errorf("TaskOutput did not return item 2's whole result")
	}
	h.send(t, "unknown item")
	if res := allToolResults(h); !strings.Contains(res, "no fan-out with that id in this session") {
		t.Errorf("an unknown fan-out id: %q", res[max(0, len(res)-500):])
	}
}
