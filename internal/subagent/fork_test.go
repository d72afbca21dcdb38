package subagent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/goldentest"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

const forkChildren = 5

// bigSystem stands in for a real system prompt (keel's is several thousand tokens).
func bigSystem() string {
	var b strings.Builder
	for i := range 600 {
		fmt.Fprintf(&b, "Rule %d: keep the working tree clean, prefer small reviewed changes, and report what you did.\n", i)
	}
	return b.String()
}

// TestForkChildrenShareTheParentsCache: each of five fork children of one parent turn sends
// the parent's request byte for byte plus the copied turn and one user message; the first
// child writes the shared prefix through the placeholder results and the briefing, and the
// others read everything but their own directive: at least 99% of their input.
func TestForkChildrenShareTheParentsCache(t *testing.T) {
	w := newWorld(t, forkScenario(forkChildren), worldOptions{forks: true, system: bigSystem()})
	out := w.run("start")
	if out.Text != "all forks reported" {
		t.Fatalf("parent text = %q", out.Text)
	}
	results := toolResults(out.Messages)
	if len(results) != forkChildren {
		t.Fatalf("%d results, want %d", len(results), forkChildren)
	}
	for _, r := range results {
		if !strings.HasPrefix(r, "fork done") || !has(r, "agentId: a") {
			t.Errorf("fork result = %q", r)
		}
	}
	parent, children := forkRequests(t, w, forkChildren)
	for _, c := range children {
		checkForkPrefix(t, parent.Body, c.Body, out.Messages[1])
	}
	checkForkShares(t, children)

	// Golden: the part of one child's request that follows the parent's request.
	// Children run in parallel, so pick the first fork's request by its directive.
	for _, c := range children {
		if bytes.Contains(c.Body, []byte(`<`+ForkTag+`>\nFORK-1:`)) {
			golden(t, "fork_child_tail.golden", childTail(t, parent.Body, c.Body))
		}
	}
}

// TestForkChildrenAtFiveThousandTokens is the measurement: three children after a
// parent prompt of about 5,000 tokens, where children 2 and 3 read at least 99% of their
// input from the cache (it was 97% when only the parent's prefix was cached).
func TestForkChildrenAtFiveThousandTokens(t *testing.T) {
	var sys strings.Builder
	for i := 0; sys.Len() < 9_500; i++ { // with the tools, about 5,000 tokens
		fmt.Fprintf(&sys, "Rule %d: keep the working tree clean and report what you did.\n", i)
	}
	w := newWorld(t, forkScenario(3), worldOptions{forks: true, system: sys.String()})
	if out := w.run("start"); out.Text != "all forks reported" {
		t.Fatalf("parent text = %q", out.Text)
	}
	parent, children := forkRequests(t, w, 3)
	if n := parent.Cache.InputTokens; n < 4500 || n > 6000 {
		t.Fatalf("the parent's request is %d tokens, want about 5,000", n)
	}
	checkForkShares(t, children)
}

// forkScenario fans out into n fork children that each answer at once.
func forkScenario(n int) *scripted.Scenario {
	fan := []scripted.Block{scripted.Text(fmt.Sprintf("I'll split this into %d parallel forks.", n))}
	for i := range n {
		fan = append(fan, scripted.ToolUse("Agent", map[string]any{"description": fmt.Sprintf("part %d", i+1), "prompt": fmt.Sprintf("FORK-%d: check part %d", i+1, i+1)}))
	}
	return &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "fork-child", When: scripted.Match{UserText: "<" + ForkTag + ">"}, Reply: []scripted.Block{scripted.Text("fork done")}},
		{Name: "fanout", When: scripted.Match{UserText: "start"}, Times: 1, Reply: fan},
		{Name: "parent-done", When: scripted.Match{ToolResult: "Agent"}, Reply: []scripted.Block{scripted.Text("all forks reported")}},
	}}
}

// forkRequests returns the parent's fan-out request and the n children's first requests, in
// the order the server received them.
func forkRequests(t *testing.T, w *world, n int) (scripted.Recorded, []scripted.Recorded) {
	t.Helper()
	var parent scripted.Recorded
	var children []scripted.Recorded
	for _, rec := range w.srv.Requests() {
		switch rec.Rule {
		case "fanout":
			parent = rec
		case "fork-child":
			children = append(children, rec)
		}
	}
	if len(children) != n {
		t.Fatalf("%d child requests, want %d", len(children), n)
	}
	return parent, children
}

// checkForkShares: the first child (by arrival) writes the shared prefix and reads the
// parent's; every later one reads at least 99% of its input.
func checkForkShares(t *testing.T, children []scripted.Recorded) {
	t.Helper()
	minLater := 1.0
	for i, c := range children {
		share := float64(c.Cache.CacheReadTokens) / float64(c.Cache.InputTokens)
		t.Logf("fork child %d (request %d): input %d tokens, cache read %d (%.2f%%), created %d, uncached %d, breakpoints %d",
			i+1, c.N, c.Cache.InputTokens, c.Cache.CacheReadTokens, 100*share, c.Cache.CacheCreationTokens, c.Cache.UncachedTokens, c.Cache.Breakpoints)
		if c.Cache.Breakpoints > 4 {
			t.Errorf("fork child %d carries %d breakpoints, over the API's 4", i+1, c.Cache.Breakpoints)
		}
		if i == 0 {
			if share < 0.9 {
				t.Errorf("the first fork child read %.4f of its input, want the parent's prefix (>= 0.9)", share)
			}
			continue
		}
		minLater = min(minLater, share)
	}
	if minLater < 0.99 {
		t.Errorf("lowest cache share of fork children 2..%d = %.4f, want >= 0.99", len(children), minLater)
	}
	t.Logf("fork cache: %d children, children 2..%d read at least %.2f%% from the cache", len(children), len(children), 100*minLater)
}

type body struct {
	Model     json.RawMessage   `json:"model"`
	MaxTokens json.RawMessage   `json:"max_tokens"`
	System    json.RawMessage   `json:"system"`
	Tools     json.RawMessage   `json:"tools"`
	Thinking  json.RawMessage   `json:"thinking"`
	Messages  []json.RawMessage `json:"messages"`
}

func decodeBody(t *testing.T, b []byte) body {
	t.Helper()
	var out body
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// plain re-encodes a message without cache markers, whose place differs by design (each
// request marks its own last block).
func plain(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var m message.Message
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(unmarked(m))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func checkForkPrefix(t *testing.T, parentBody, childBody []byte, reply message.Message) {
	t.Helper()
	p, c := decodeBody(t, parentBody), decodeBody(t, childBody)
	for _, f := range []struct {
		name string
		a, b json.RawMessage
	}{{"model", p.Model, c.Model}, {"max_tokens", p.MaxTokens, c.MaxTokens}, {"system", p.System, c.System},
		{"tools", p.Tools, c.Tools}, {"thinking", p.Thinking, c.Thinking}} {
		if !bytes.Equal(f.a, f.b) {
			t.Errorf("fork child's %s differs from the parent's request", f.name)
		}
	}
	if len(c.Messages) != len(p.Messages)+2 {
		t.Fatalf("child has %d messages, want parent's %d + 2", len(c.Messages), len(p.Messages))
	}
	for i := range p.Messages {
		if plain(t, p.Messages[i]) != plain(t, c.Messages[i]) {
			t.Errorf("message %d differs from the parent's", i)
		}
	}
	want, _ := json.Marshal(reply)
	if got := plain(t, c.Messages[len(p.Messages)]); got != string(want) {
		t.Errorf("copied turn mismatch:\nwant %s\ngot  %s", want, got)
	}
}

func childTail(t *testing.T, parentBody, childBody []byte) []byte {
	p, c := decodeBody(t, parentBody), decodeBody(t, childBody)
	var buf bytes.Buffer
	for _, m := range c.Messages[len(p.Messages):] {
		var pretty bytes.Buffer
		_ = json.Indent(&pretty, m, "", "  ")
		buf.Write(pretty.Bytes())
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldentest.Check(t, name, got)
}

func TestForkRefusesRecursion(t *testing.T) {
	sc := forkScenario(forkChildren)
	// The fork child tries to fork again.
	sc.Rules[0] = scripted.Rule{Name: "fork-child", When: scripted.Match{UserText: "<" + ForkTag + ">"}, Times: forkChildren,
		Reply: []scripted.Block{scripted.ToolUse("Agent", map[string]any{"description": "again", "prompt": "deeper"})}}
	sc.Rules = append([]scripted.Rule{{Name: "child-refused", When: scripted.Match{Contains: "Fork is not available inside a forked agent"},
		Reply: []scripted.Block{scripted.Text("refused as expected")}}}, sc.Rules...)
	w := newWorld(t, sc, worldOptions{forks: true})
	out := w.run("start")
	for _, r := range toolResults(out.Messages) {
		if !strings.HasPrefix(r, "refused as expected") {
			t.Errorf("fork child result = %q", r)
		}
	}
}

func TestDropIncomplete(t *testing.T) {
	in := []message.Message{
		message.User(message.Text("go")),
		message.Assistant(message.Text("calling"), message.ToolUse("t1", "Read", json.RawMessage(`{}`)), message.ToolUse("t2", "Read", json.RawMessage(`{}`))),
		message.User(message.ToolResult("t1", []message.Block{message.Text("ok")}, false)),
		message.Assistant(message.ToolUse("t3", "Bash", json.RawMessage(`{}`))),
	}
	want := []message.Message{in[0],
		message.Assistant(message.Text("calling"), message.ToolUse("t1", "Read", json.RawMessage(`{}`))),
		in[2]}
	if diff := cmp.Diff(want, dropIncomplete(in)); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}
