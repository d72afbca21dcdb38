package clearing

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
)

// conversation is a prompt and n turns, each a Read of a file whose result is size bytes.
func conversation(n, size int) []message.Message {
	h := []message.Message{message.User(message.Text("read the files"))}
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("toolu_%02d", i)
		input := json.RawMessage(fmt.Sprintf(`{"file_path":"/p/f%02d.go"}`, i))
		h = append(h,
			message.Assistant(message.ToolUse(id, "Read", input)),
			message.User(message.ToolResult(id, []message.Block{message.Text(strings.Repeat("x", size))}, false)))
	}
	return h
}

func readOnly(name string, _ json.RawMessage) bool { return name == "Read" }

// clock is a settable time.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func resultText(m message.Message) string { return m.Content[0].Content[0].Text }

// sentAt records a request as the loop does after its response.
func sentAt(c *Clearer, model string, input int64) {
	c.Sent(&provider.Request{Model: model}, input)
}

func TestStubText(t *testing.T) {
	got := Stub("Read", json.RawMessage(`{ "file_path": "/p/a.go" }`), true)
	want := `[Cleared to save context: Read /p/a.go. Call Read again to see it.]`
	if got != want {
		t.Errorf("read-only stub:\n got %s\nwant %s", got, want)
	}
	got = Stub("Bash", json.RawMessage(`{"command":"go test ./...","description":"Run the tests"}`), false)
	want = `[Cleared to save context: Bash go test ./.... Calling Bash again reruns it, effects included: only if needed and safe.]`
	if got != want {
		t.Errorf("stub of a call with effects:\n got %s\nwant %s", got, want)
	}
	// The other fields follow the identifying one; an input without one stays JSON.
	got = Stub("Read", json.RawMessage(`{"file_path":"/p/a.go","offset":10,"limit":5}`), true)
	want = `[Cleared to save context: Read /p/a.go {"limit":5,"offset":10}. Call Read again to see it.]`
	if got != want {
		t.Errorf("stub of a ranged read:\n got %s\nwant %s", got, want)
	}
	got = Stub("TodoWrite", json.RawMessage(`{"todos":[]}`), false)
	want = `[Cleared to save context: TodoWrite {"todos":[]}. Calling TodoWrite again reruns it, effects included: only if needed and safe.]`
	if got != want {
		t.Errorf("stub of an input without a path or command:\n got %s\nwant %s", got, want)
	}
	long := Stub("Write", json.RawMessage(`{"content":"`+strings.Repeat("é", 400)+`"}`), false)
	if !strings.Contains(long, "…") || len(long) > 600 {
		t.Errorf("a long input is not shortened: %d bytes", len(long))
	}
}

// What is cleared and what is kept: at a free moment every old result outside the newest
// Keep turns becomes a stub; the newest turns, errors, small results and the calls stay.
func TestClearsOldResultsKeepsRecentOnes(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	c := New(Policy{Trigger: 5_000, Keep: 3}, clk.now)
	h := conversation(10, 4_000)
	// Turn 2 failed and turn 3 read a small file: neither is worth a stub.
	h[4].Content[0].IsError = true
	h[6].Content[0].Content[0].Text = "short"
	sentAt(c, "m", 12_000)
	clk.t = clk.t.Add(6 * time.Minute) // the five-minute cache lapsed: a free moment
	before := fmt.Sprint(h)
	out, rep := c.Clear(h, "m", readOnly)
	if fmt.Sprint(h) != before {
		t.Fatal("Clear modified the history it was given")
	}
	if rep.Reason != "cache TTL lapsed" {
		t.Errorf("reason %q, want cache TTL lapsed", rep.Reason)
	}
	var cleared []int
	for _, r := range rep.Results {
		cleared = append(cleared, r.Message)
	}
	// Results sit at odd indexes 2, 4, …, 20; the newest three (16, 18, 20) stay whole.
	if diff := cmp.Diff([]int{2, 8, 10, 12, 14}, cleared); diff != "" {
		t.Errorf("cleared messages (-want +got):\n%s", diff)
	}
	if rep.From != 2 {
		t.Errorf("From = %d, want 2", rep.From)
	}
	for _, i := range []int{2, 8, 14} {
		want := fmt.Sprintf(`[Cleared to save context: Read /p/f%02d.go. Call Read again to see it.]`, i/2)
		if got := resultText(out[i]); got != want {
			t.Errorf("message %d: %q, want %q", i, got, want)
		}
		if out[i].Content[0].ToolUseID != h[i].Content[0].ToolUseID {
			t.Errorf("message %d lost its tool_use_id", i)
		}
	}
	for _, i := range []int{4, 6, 16, 18, 20} {
		if resultText(out[i]) != resultText(h[i]) {
			t.Errorf("message %d was changed", i)
		}
	}
	for i := 1; i < len(out); i += 2 {
		if !cmp.Equal(out[i], h[i]) {
			t.Errorf("call %d was changed", i)
		}
	}
	if rep.Freed < 5*900 {
		t.Errorf("freed %d tokens, want about 5 × 1,000", rep.Freed)
	}
	if m, b, ok := c.Mark(out); !ok || m != 14 || b != 0 {
		t.Errorf("mark = %d, %d, %v; want the newest stub, 14, 0", m, b, ok)
	}

	// Stubs are never cleared again: the same history clears nothing more.
	clk.t = clk.t.Add(time.Hour)
	if again, rep := c.Clear(out, "m", readOnly); len(rep.Results) != 0 || len(again) != len(out) {
		t.Errorf("a cleared history was cleared again: %+v", rep)
	}
}

// Between free moments a clearing must repay its cache write within Payback requests; a
// small batch does not, a large one does.
func TestClearsOnlyWhenItPays(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	c := New(Policy{Trigger: 5_000, Keep: 3}, clk.now)
	few := conversation(6, 4_000) // three old results, three kept
	sentAt(c, "m", 8_000)
	clk.t = clk.t.Add(time.Minute)
	if _, rep := c.Clear(few, "m", readOnly); len(rep.Results) != 0 {
		t.Errorf("three old results against three kept turns were cleared: %+v", rep)
	}
	many := conversation(20, 4_000)
	sentAt(c, "m", 22_000)
	clk.t = clk.t.Add(time.Minute)
	out, rep := c.Clear(many, "m", readOnly)
	if len(rep.Results) != 17 || rep.Reason != "repaid within 8 requests" {
		t.Errorf("cleared %d (%s), want 17 (repaid within 8 requests)", len(rep.Results), rep.Reason)
	}
	if float64(rep.Freed)*readRate*DefaultPayback < float64(rep.Rewritten)*(writeRate-readRate) {
		t.Errorf("freed %d does not repay rewriting %d", rep.Freed, rep.Rewritten)
	}
	if len(out) != len(many) {
		t.Error("clearing changed the number of messages")
	}
}

// Below the trigger nothing is cleared, free moment or not; a model change and a compaction
// are free moments.
func TestTriggerAndFreeMoments(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	// Five results cleared against three kept turns need eight requests to repay their
	// rewrite: not within six.
	h := conversation(8, 4_000)

	small := New(Policy{Trigger: 1_000_000}, clk.now)
	sentAt(small, "m", 9_000)
	if _, rep := small.Clear(h, "other", readOnly); len(rep.Results) != 0 {
		t.Errorf("cleared below the trigger: %+v", rep)
	}

	c := New(Policy{Trigger: 5_000, Keep: 3, Payback: 6}, clk.now)
	if _, rep := c.Clear(h, "m", readOnly); len(rep.Results) != 0 {
		t.Errorf("the first request was taken for a free moment: %+v", rep)
	}
	sentAt(c, "m", 9_000)
	if _, rep := c.Clear(h, "m", readOnly); len(rep.Results) != 0 {
		t.Errorf("cleared five results at no free moment: %+v", rep)
	}
	if _, rep := c.Clear(h, "other", readOnly); rep.Reason != "model changed" {
		t.Errorf("model change: reason %q", rep.Reason)
	}
	c.Reset("compaction")
	if _, rep := c.Clear(h, "m", readOnly); rep.Reason != "compaction" {
		t.Errorf("after a reset: reason %q", rep.Reason)
	}
	// A one-hour cache does not lapse in six minutes.
	hour := New(Policy{Trigger: 5_000, Keep: 3, Payback: 6}, clk.now)
	hour.Sent(&provider.Request{Model: "m", System: []provider.SystemBlock{{Text: "s", CacheControl: &message.CacheControl{Type: "ephemeral", TTL: provider.TTL1h}}}}, 9_000)
	clk.t = clk.t.Add(6 * time.Minute)
	if _, rep := hour.Clear(h, "m", readOnly); len(rep.Results) != 0 {
		t.Errorf("a one-hour cache was taken for lapsed after six minutes: %+v", rep)
	}
}

// A clearing reports each result's tool_use id and stub (what a transcript records), and the
// mark is read from the history: a new Clearer given the cleared history — a resumed agent —
// marks the same block as the one that cleared, and clears nothing more.
func TestClearingCarriesOverToANewClearer(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	c := New(Policy{Trigger: 5_000, Keep: 3}, clk.now)
	sentAt(c, "m", 12_000)
	clk.t = clk.t.Add(6 * time.Minute)
	out, rep := c.Clear(conversation(10, 4_000), "m", readOnly)
	if len(rep.Results) == 0 {
		t.Fatal("nothing cleared")
	}
	for _, r := range rep.Results {
		b := out[r.Message].Content[r.Block]
		if r.ToolUseID != b.ToolUseID || r.Stub != b.Content[0].Text || r.Stub != Stub(r.Tool, r.Input, true) {
			t.Errorf("result %+v does not name its block %+v", r, b)
		}
	}
	last := rep.Results[len(rep.Results)-1]
	m, b, ok := c.Mark(out)
	resumed := New(Policy{Trigger: 5_000, Keep: 3}, clk.now)
	rm, rb, rok := resumed.Mark(out)
	if !ok || m != last.Message || b != last.Block || rm != m || rb != b || !rok {
		t.Errorf("marks: clearer %d/%d %v, resumed %d/%d %v, want the newest stub %d/%d", m, b, ok, rm, rb, rok, last.Message, last.Block)
	}
	if _, again := resumed.Clear(out, "m", readOnly); len(again.Results) != 0 {
		t.Errorf("a resumed clearer cleared %d more results", len(again.Results))
	}
}

// A transcript written by an earlier version holds stubs with the old wording; resumed, its
// newest stub is still the one the cache breakpoint stays on.
func TestMarkFindsStubsOfEarlierVersions(t *testing.T) {
	h := conversation(4, 2_000)
	h[4].Content[0].Content[0].Text = `[Old tool result cleared to keep the context small: Read {"file_path":"/p/f02.go"}.] Call Read again with this input if you need its output.`
	c := New(Policy{}, time.Now)
	if m, b, ok := c.Mark(h); !ok || m != 4 || b != 0 {
		t.Errorf("Mark = %d, %d, %v; want the old stub at 4, 0", m, b, ok)
	}
}

// By default the newest two tool-result turns stay whole, and a context under 10,000 tokens
// is left alone.
func TestDefaultKeepsTwoTurns(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	c := New(Policy{}, clk.now)
	h := conversation(8, 4_000)
	sentAt(c, "m", 9_500)
	clk.t = clk.t.Add(6 * time.Minute)
	if _, rep := c.Clear(h, "m", readOnly); len(rep.Results) != 0 {
		t.Fatalf("cleared under 10,000 tokens: %+v", rep)
	}
	sentAt(c, "m", 10_500)
	clk.t = clk.t.Add(6 * time.Minute)
	_, rep := c.Clear(h, "m", readOnly)
	var cleared []int
	for _, r := range rep.Results {
		cleared = append(cleared, r.Message)
	}
	if diff := cmp.Diff([]int{2, 4, 6, 8, 10, 12}, cleared); diff != "" {
		t.Errorf("cleared messages (-want +got):\n%s", diff)
	}
}
