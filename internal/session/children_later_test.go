package session

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/waittest"
)

// Background and resumed agents are subagents that run on after the Agent call that started
// them returned, or run again; they are built as every agent is, so they compact and count
// towards the budget too.

// inBackground are the main agent's rules around a background subagent: it starts one, ends
// its turn, and answers the task notification with answer.
func inBackground(answer ...scripted.Block) []scripted.Rule {
	return []scripted.Rule{
		{Name: "main delegates", When: leadTurn(scripted.Match{UserText: "delegate"}), Reply: []scripted.Block{
			scripted.ToolUse("Agent", map[string]any{"description": "reader", "prompt": "read big.txt over and over",
				"subagent_type": "general-purpose", "run_in_background": true})}},
		{Name: "main waits", When: leadTurn(scripted.Match{ToolResult: "Agent"}), Reply: []scripted.Block{scripted.Text("started")}},
		{Name: "main reports", When: leadTurn(scripted.Match{Contains: "<task-notification>"}), Reply: answer},
	}
}

// A background subagent whose history outgrows the window compacts.
func TestBackgroundAgentCompactsWhenItsContextFills(t *testing.T) {
	_, cwd := longSession(t, 0)
	rules := append(inBackground(scripted.Text("reported")), readsBig(scripted.Match{LacksTool: "Agent"}, 14)...)
	h := newHarness(t, &scripted.Scenario{Rules: rules}, Options{Cwd: cwd, ContextWindow: 30_000, PermissionMode: "bypassPermissions", SettingsArgs: noClearing})
	events := sendAndSettle(t, h, "delegate")
	if res := results(events); len(res) != 2 || res[1].Text != "reported" {
		t.Fatalf("results %+v; want the turn that started the agent and the one its report woke", res)
	}
	if !compactedBy(events, "general-purpose") {
		t.Error("the background agent's history outgrew the window and it did not compact")
	}
	if compactedBy(events, "") {
		t.Error("the main agent compacted; only the background agent's history was long")
	}
}

// --max-budget-usd counts what a background subagent spends: one that overspends is stopped,
// its report says so, and the main agent's turn for that report ends at the budget.
func TestBudgetStopsABackgroundAgentThatOverspends(t *testing.T) {
	_, cwd := longSession(t, 0)
	rules := append(inBackground(scripted.ToolUse("Read", map[string]string{"file_path": "big.txt"})),
		scripted.Rule{Name: "main goes on", When: leadTurn(scripted.Match{ToolResult: "Read"}), Reply: []scripted.Block{scripted.Text("all done")}})
	rules = append(rules, readsBig(scripted.Match{LacksTool: "Agent"}, 20)...)
	h := newHarness(t, &scripted.Scenario{Rules: rules}, Options{Cwd: cwd, PermissionMode: "bypassPermissions", SDK: SDKOptions{MaxBudgetUSD: 0.05}})
	events := sendAndSettle(t, h, "delegate")
	reads, reported := 0, false
	for _, r := range h.srv.Requests() {
		switch {
		case strings.HasPrefix(r.Rule, "child reads"):
			reads++
		case r.Rule == "main reports":
			reported = true
			if !strings.Contains(string(r.Body), "maximum budget") {
				t.Error("the background agent's report does not say the budget stopped it")
			}
		case r.Rule == "main goes on":
			t.Error("the main agent was asked again after its background agent had spent the budget")
		}
	}
	if !reported {
		t.Error("the main agent never got the background agent's report")
	}
	if reads >= 20 {
		t.Errorf("the background agent read %d times; the budget should have stopped it", reads)
	}
	res := results(events)
	if len(res) == 0 || res[len(res)-1].Subtype != "error_max_budget_usd" {
		t.Errorf("results %+v; want the last to end at the budget", res)
	}
}

// resumeAgent continues the finished agent id with msg, as `keel agents resume` (and
// SendMessage to its id) does, and returns its answer and the events of its run.
func resumeAgent(t *testing.T, h *harness, id, msg string) (string, []event.Event) {
	t.Helper()
	var mu sync.Mutex
	var events []event.Event
	h.sess.agents.SetIdleEvents(func(e event.Event) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	})
	defer h.sess.agents.SetIdleEvents(nil)
	text, err := h.sess.Agents().Resume(t.Context(), id, msg)
	if err != nil {
		t.Fatalf("resume agent %s: %v", id, err)
	}
	mu.Lock()
	defer mu.Unlock()
	return text, events
}

// A resumed subagent compacts: its history is replayed (from memory in the same session,
// from its transcript after keel --resume) and, once its run takes it past the window, it
// compacts as it would have had it never stopped.
func TestResumedAgentCompactsWhenItsContextFills(t *testing.T) {
	for _, later := range []string{"same session", "after resume"} {
		t.Run(later, func(t *testing.T) {
			_, cwd := longSession(t, 0)
			child := scripted.Match{LacksTool: "Agent"}
			// Two reads, then the first run ends; the second run reads on. Rules fire in
			// order, so the first run's are used up when the second starts.
			rules := readsBig(child, 2)
			rules = append(rules[:len(rules)-1], scripted.Rule{Name: "child stops", When: child, Times: 1, Reply: []scripted.Block{scripted.Text("first pass")}})
			for i := 3; i <= 16; i++ {
				rules = append(rules, scripted.Rule{Name: "child reads " + strconv.Itoa(i), When: child, Times: 1,
					Reply: []scripted.Block{scripted.ToolUse("Read", map[string]any{"file_path": "big.txt", "offset": i})}})
			}
			rules = append(rules, scripted.Rule{Name: "child done", When: child, Reply: []scripted.Block{scripted.Text("child done")}},
				scripted.Rule{Name: "main delegates", When: leadTurn(scripted.Match{UserText: "delegate"}), Reply: []scripted.Block{
					scripted.ToolUse("Agent", map[string]any{"description": "reader", "prompt": "read big.txt", "subagent_type": "general-purpose"})}},
				scripted.Rule{Name: "main done", When: leadTurn(scripted.Match{ToolResult: "Agent"}), Reply: []scripted.Block{scripted.Text("delegated")}})
			opts := Options{Cwd: cwd, Home: t.TempDir(), ContextWindow: 30_000, PermissionMode: "bypassPermissions", SettingsArgs: noClearing}
			h := newHarness(t, &scripted.Scenario{Rules: rules}, opts)
			events := h.send(t, "delegate")
			if compactedBy(events, "general-purpose") {
				t.Fatal("the subagent compacted in its first, short run: the test proves nothing")
			}
			var id string
			for _, m := range h.sess.History() {
				for _, b := range m.Content {
					for _, c := range b.Content {
						if m := agentIDRe.FindStringSubmatch(c.Text); m != nil {
							id = m[1]
						}
					}
				}
			}
			if id == "" {
				t.Fatal("no agent id in the Agent result")
			}
			if later == "after resume" {
				h.sess.Close()
				opts.Resume = h.sess.ID()
				h = newHarnessOn(t, h.srv, opts)
			}
			text, events := resumeAgent(t, h, id, "read it again, many times")
			if !strings.HasPrefix(text, "child done") {
				t.Fatalf("the resumed agent said %q", text)
			}
			if !compactedBy(events, "general-purpose") {
				t.Error("the resumed agent's history outgrew the window and it did not compact")
			}
			var replayed bool
			for _, r := range h.srv.Requests() {
				replayed = replayed || (r.Rule == "child reads 3" && strings.Contains(string(r.Body), "first pass"))
			}
			if !replayed {
				t.Error("the resumed agent's first request lacks its first run's history")
			}
		})
	}
}

// A resumed teammate compacts: the session ends while she works on a task; --continue brings
// her back with her history replayed from her transcript, and once her work on the task takes
// her past the window she compacts.
func TestResumedTeammateCompactsWhenItsContextFills(t *testing.T) {
	_, cwd := longSession(t, 0)
	alice := func(m scripted.Match) scripted.Match { m.System = mateIs("alice").System; return m }
	read := func(i int) []scripted.Block {
		return []scripted.Block{scripted.ToolUse("Read", map[string]any{"file_path": "big.txt", "offset": i})}
	}
	rules := []scripted.Rule{
		{Name: "summary", When: scripted.Match{UserText: "Summarise this conversation"}, Reply: []scripted.Block{scripted.Text("SUMMARY: big.txt was read.")}},
		{Name: "alice reads 1", When: alice(scripted.Match{UserText: "work the board"}), Times: 1, Reply: read(1)},
		{Name: "alice reads 2", When: alice(scripted.Match{ToolResult: "Read"}), Times: 1, Reply: read(2)},
		{Name: "alice ready", When: alice(scripted.Match{ToolResult: "Read"}), Times: 1, Reply: []scripted.Block{scripted.Text("ready after two reads")}},
		{Name: "alice stalls", When: alice(scripted.Match{UserText: `<task-assignment id="1"`}), Times: 1,
			Reply: []scripted.Block{scripted.Text("working")}, Fault: &scripted.Fault{Delay: 10 * time.Minute}},
	}
	// Back, she reads on (rules fire in order: the ones above are used up).
	for i := 3; i <= 16; i++ {
		rules = append(rules, scripted.Rule{Name: "alice reads " + strconv.Itoa(i), When: mateIs("alice"), Times: 1, Reply: read(i)})
	}
	rules = append(rules,
		scripted.Rule{Name: "alice completes", When: mateIs("alice"), Times: 1, Reply: []scripted.Block{
			scripted.ToolUse("TaskUpdate", map[string]any{"taskId": "1", "status": "completed"})}},
		scripted.Rule{Name: "alice done", When: mateIs("alice"), Reply: []scripted.Block{scripted.Text("finished")}},
		scripted.Rule{Name: "lead starts", When: leadTurn(scripted.Match{UserText: "start"}), Reply: []scripted.Block{
			scripted.ToolUse("TaskCreate", map[string]any{"subject": "the task"}),
			scripted.ToolUse("Agent", map[string]any{"description": "worker", "prompt": "work the board", "name": "alice"})}},
		scripted.Rule{Name: "lead waits", When: leadTurn(scripted.Match{ToolResult: "Agent"}), Reply: []scripted.Block{scripted.Text("started")}},
		scripted.Rule{Name: "lead continues", When: leadTurn(scripted.Match{UserText: "how is it going"}), Reply: []scripted.Block{scripted.Text("fine")}})
	srv, err := scripted.Start(t.Context(), "", &scripted.Scenario{Rules: rules, Fallback: &scripted.Rule{Reply: []scripted.Block{scripted.Text("noted")}}}, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	opts := Options{Home: t.TempDir(), Cwd: cwd, ContextWindow: 30_000, PermissionMode: "bypassPermissions", SettingsArgs: noClearing,
		Team: TeamOptions{Enabled: true, Lease: time.Minute, ShutdownTimeout: waittest.Timeout()}}
	first := newHarnessOn(t, srv, opts)
	first.send(t, "start")
	waittest.Until(t, "alice to be mid-task", func() bool { return slicesContains(ruleNames(first), "alice stalls") })
	if err := first.sess.Close(); err != nil {
		t.Fatal(err)
	}

	opts.Continue = true
	second := newHarnessOn(t, srv, opts)
	events := sendAndSettle(t, second, "how is it going")
	if !slicesContains(ruleNames(second), "alice completes") {
		t.Fatalf("alice did not finish her task after the resume: %v", ruleNames(second))
	}
	if !compactedBy(events, "alice") {
		t.Error("the resumed alice's history outgrew the window and she did not compact")
	}
	var replayed bool
	for _, r := range srv.Requests() {
		replayed = replayed || (r.Rule == "alice reads 3" && strings.Contains(string(r.Body), "ready after two reads"))
	}
	if !replayed {
		t.Error("the resumed alice's first request lacks her history")
	}
}
