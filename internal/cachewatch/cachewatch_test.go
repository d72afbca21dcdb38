package cachewatch

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
)

var sections = []string{"static", "memory", "env"}

func base() *provider.Request {
	return &provider.Request{
		Model:  "model-a",
		Source: "main",
		System: []provider.SystemBlock{{Text: "static"}, {Text: "memory"}, {Text: "env at start"}},
		Tools: []provider.ToolSpec{
			{Name: "Read", Description: "read", InputSchema: json.RawMessage(`{"type":"object"}`)},
			{Name: "Bash", Description: "run", InputSchema: json.RawMessage(`{"type":"object"}`)},
		},
		Messages: []message.Message{message.User(message.Text("hello"))},
	}
}

// next returns req with an assistant reply and a new user message appended, as the loop
// builds the following request.
func next(req *provider.Request, turn int) *provider.Request {
	n := *req
	n.Messages = append(slices.Clone(req.Messages),
		message.Assistant(message.Text(fmt.Sprintf("reply %d", turn))),
		message.User(message.Text(fmt.Sprintf("prompt %d", turn))))
	return &n
}

func strs(bs []Break) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.String())
	}
	return out
}

func TestBreaks(t *testing.T) {
	tests := []struct {
		name     string
		edit     func(r *provider.Request)
		want     []string
		wantKind string
	}{
		{"appended tail only", func(*provider.Request) {}, nil, ""},
		{"tool added", func(r *provider.Request) {
			r.Tools = append(r.Tools, provider.ToolSpec{Name: "mcp__github__create_issue", InputSchema: json.RawMessage(`{}`)})
		}, []string{"tools: mcp__github__create_issue added"}, KindToolAdded},
		{"tool removed", func(r *provider.Request) { r.Tools = r.Tools[:1] }, []string{"tools: Bash removed"}, KindToolRemoved},
		{"tool schema changed", func(r *provider.Request) {
			r.Tools = slices.Clone(r.Tools)
			r.Tools[0].InputSchema = json.RawMessage(`{"type":"object","required":["path"]}`)
		}, []string{"tools: Read changed"}, KindToolChanged},
		{"tool order changed", func(r *provider.Request) {
			r.Tools = []provider.ToolSpec{r.Tools[1], r.Tools[0]}
		}, []string{"tools: order changed"}, KindToolOrder},
		{"section changed", func(r *provider.Request) {
			r.System = slices.Clone(r.System)
			r.System[2].Text = "env later"
		}, []string{`system: section "env" changed`}, KindSectionChanged},
		{"message edited", func(r *provider.Request) {
			r.Messages[0] = message.User(message.Text("hello, edited"))
		}, []string{"messages[0]: content changed"}, KindMessageChanged},
		{"model changed", func(r *provider.Request) { r.Model = "model-b" },
			[]string{`model: changed from "model-a" to "model-b"`}, KindModelChanged},
		{"history shortened", func(r *provider.Request) { r.Messages = nil },
			[]string{"messages: history shortened from 3 to 0 messages"}, KindHistoryShortened},
		{"breakpoints moving is not a change", func(r *provider.Request) {
			provider.PlaceBreakpoints(r, provider.TTLPolicy{})
		}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := New(Options{})
			first := next(base(), 1)
			provider.PlaceBreakpoints(first, provider.TTLPolicy{})
			if got := w.Observe(first, sections); got != nil {
				t.Fatalf("first request reported %v", got)
			}
			second := next(first, 2)
			second.Messages = slices.Clone(second.Messages)
			tt.edit(second)
			got := w.Observe(second, sections)
			if diff := cmp.Diff(tt.want, strs(got)); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
			tot := w.Totals()
			if tt.wantKind != "" && tot.ByKind[tt.wantKind] != 1 {
				t.Errorf("totals by kind = %v, want one %s", tot.ByKind, tt.wantKind)
			}
			if tot.Breaks != len(tt.want) {
				t.Errorf("totals breaks = %d, want %d", tot.Breaks, len(tt.want))
			}
		})
	}
}

func TestAnnouncedChangesAreNotBreaks(t *testing.T) {
	w := New(Options{})
	r := base()
	w.Observe(r, sections)
	w.Report(message.Usage{InputTokens: 5000})

	// The compaction request itself is ignored and does not move the baseline.
	compact := next(r, 1)
	compact.Source = provider.SourceCompact
	compact.Tools = nil
	if got := w.Observe(compact, sections); got != nil {
		t.Errorf("compaction request reported %v", strs(got))
	}
	w.Report(message.Usage{InputTokens: 6000})

	w.Announce("compaction")
	fresh := base()
	fresh.Messages = []message.Message{message.User(message.Text("summary of earlier work"))}
	fresh.System = slices.Clone(fresh.System)
	fresh.System[1].Text = "memory re-read"
	if got := w.Observe(fresh, sections); got != nil {
		t.Errorf("announced compaction reported %v", strs(got))
	}
	if got := w.Report(message.Usage{InputTokens: 3000}); got != nil {
		t.Errorf("first response after compaction reported %v", strs(got))
	}
	// From here on, changes count again.
	edited := next(fresh, 2)
	edited.Messages[0] = message.User(message.Text("summary, rewritten"))
	if got := strs(w.Observe(edited, sections)); !cmp.Equal(got, []string{"messages[0]: content changed"}) {
		t.Errorf("after compaction got %v", got)
	}
	if tot := w.Totals(); tot.Breaks != 1 {
		t.Errorf("breaks = %d, want 1", tot.Breaks)
	}
}

func TestLowCacheRead(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	w := New(Options{Now: func() time.Time { return now }})
	policy, _ := provider.NewTTLPolicy(nil)

	r := base()
	provider.PlaceBreakpoints(r, policy)
	w.Observe(r, sections)
	w.Report(message.Usage{InputTokens: 10, CacheCreationInputTokens: 4000})

	// Unchanged prefix, full read: fine.
	r = next(r, 1)
	provider.PlaceBreakpoints(r, policy)
	now = now.Add(time.Minute)
	w.Observe(r, sections)
	if got := w.Report(message.Usage{InputTokens: 10, CacheReadInputTokens: 4010, CacheCreationInputTokens: 200}); got != nil {
		t.Errorf("full read reported %v", strs(got))
	}

	// Unchanged prefix, read short, within the TTL.
	r = next(r, 2)
	provider.PlaceBreakpoints(r, policy)
	now = now.Add(time.Minute)
	w.Observe(r, sections)
	got := strs(w.Report(message.Usage{InputTokens: 4300}))
	want := []string{"cache: read 0 cached tokens, expected 4220 from the unchanged prefix"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}

	// Read short after a gap longer than the 5m TTL.
	r = next(r, 3)
	provider.PlaceBreakpoints(r, policy)
	now = now.Add(7 * time.Minute)
	w.Observe(r, sections)
	got = strs(w.Report(message.Usage{InputTokens: 100, CacheCreationInputTokens: 4300}))
	want = []string{"cache: TTL expiry suspected: 7m0s since the previous request, TTL 5m0s (read 0 of 4300 tokens)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}

	tot := w.Totals()
	wantTot := Totals{Hits: 1, Misses: 3, Breaks: 2, ByKind: map[string]int{KindLowCacheRead: 1, KindTTLExpired: 1},
		ReadTokens: 4010, WriteTokens: 8500}
	if diff := cmp.Diff(wantTot, tot); diff != "" {
		t.Errorf("totals mismatch (-want +got):\n%s", diff)
	}
}

func TestOneHourTTLIsRead(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	w := New(Options{Now: func() time.Time { return now }})
	policy, _ := provider.NewTTLPolicy([]string{"main"})
	r := base()
	provider.PlaceBreakpoints(r, policy)
	w.Observe(r, sections)
	w.Report(message.Usage{InputTokens: 5000})
	r = next(r, 1)
	provider.PlaceBreakpoints(r, policy)
	now = now.Add(30 * time.Minute)
	w.Observe(r, sections)
	got := strs(w.Report(message.Usage{InputTokens: 5100}))
	want := []string{"cache: read 0 cached tokens, expected 5000 from the unchanged prefix"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("30 minutes within a 1h TTL must not be called expiry (-want +got):\n%s", diff)
	}
}

func TestSmallPromptsAreNotExpectedToHit(t *testing.T) {
	w := New(Options{})
	r := base()
	w.Observe(r, sections)
	w.Report(message.Usage{InputTokens: 300})
	w.Observe(next(r, 1), sections)
	if got := w.Report(message.Usage{InputTokens: 320}); got != nil {
		t.Errorf("below the cacheable minimum reported %v", strs(got))
	}
}

// TestLongSessionHasNoBreaks runs 20 turns, some with parallel tool calls, building each
// request from the last as the loop does, and with usage that reads the whole previous prompt.
func TestLongSessionHasNoBreaks(t *testing.T) {
	w := New(Options{})
	policy, _ := provider.NewTTLPolicy([]string{"main"})
	history := []message.Message{message.User(message.Text("start"))}
	var prevTotal int64
	for turn := range 20 {
		req := base()
		req.Messages = history
		provider.PlaceBreakpoints(req, policy)
		if got := w.Observe(req, sections); got != nil {
			t.Fatalf("turn %d: %v", turn, strs(got))
		}
		total := prevTotal + 700
		if got := w.Report(message.Usage{InputTokens: total - prevTotal, CacheReadInputTokens: prevTotal}); got != nil {
			t.Fatalf("turn %d report: %v", turn, strs(got))
		}
		prevTotal = total
		var uses, results []message.Block
		for i := range 1 + turn%3 { // one to three parallel calls
			id := fmt.Sprintf("t%d_%d", turn, i)
			uses = append(uses, message.ToolUse(id, "Read", json.RawMessage(`{"path":"a"}`)))
			results = append(results, message.ToolResult(id, []message.Block{message.Text("data")}, false))
		}
		history = append(slices.Clone(history), message.Assistant(uses...), message.User(results...))
	}
	if tot := w.Totals(); tot.Breaks != 0 || tot.Hits != 19 || tot.Misses != 1 {
		t.Errorf("totals = %+v", tot)
	}
}

func TestTotalsAdd(t *testing.T) {
	a := Totals{Hits: 1, Breaks: 1, ByKind: map[string]int{KindToolAdded: 1}}
	b := Totals{Misses: 2, Breaks: 2, ByKind: map[string]int{KindToolAdded: 1, KindMessageChanged: 1}}
	want := Totals{Hits: 1, Misses: 2, Breaks: 3, ByKind: map[string]int{KindToolAdded: 2, KindMessageChanged: 1}}
	if diff := cmp.Diff(want, a.Add(b)); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

// A declared clearing excuses the messages it changed and nothing else: no break for them, no
// cache read held to the old prefix, a count in Totals.Declared; a tool added in the same
// request is still a break.
func TestDeclaredClearing(t *testing.T) {
	w := New(Options{})
	r := next(next(base(), 1), 2)
	w.Observe(r, sections)
	w.Report(message.Usage{InputTokens: 10, CacheCreationInputTokens: 6000})

	cleared := next(r, 3)
	cleared.Messages[2] = message.User(message.Text("[Old tool result cleared to keep the context small: …]"))
	w.Declare(2, "old tool results cleared")
	if got := w.Observe(cleared, sections); got != nil {
		t.Errorf("declared clearing reported %v", strs(got))
	}
	if got := w.Report(message.Usage{InputTokens: 10, CacheReadInputTokens: 1200, CacheCreationInputTokens: 5000}); got != nil {
		t.Errorf("the short read of a declared clearing reported %v", strs(got))
	}

	// The declaration covers one request: a later change is a break again.
	edited := next(cleared, 4)
	edited.Messages[2] = message.User(message.Text("edited"))
	if got := strs(w.Observe(edited, sections)); !cmp.Equal(got, []string{"messages[2]: content changed"}) {
		t.Errorf("after the declared request got %v", got)
	}

	// A declaration from message 4 does not excuse an earlier change, nor a new tool.
	w.Report(message.Usage{InputTokens: 6000})
	more := next(edited, 5)
	more.Messages[1] = message.Assistant(message.Text("rewritten"))
	more.Tools = append(slices.Clone(more.Tools), provider.ToolSpec{Name: "mcp__x__y", InputSchema: json.RawMessage(`{}`)})
	w.Declare(4, "old tool results cleared")
	got := strs(w.Observe(more, sections))
	if diff := cmp.Diff([]string{"tools: mcp__x__y added", "messages[1]: content changed"}, got); diff != "" {
		t.Errorf("undeclared changes (-want +got):\n%s", diff)
	}
	if tot := w.Totals(); tot.Declared != 2 || tot.Breaks != 3 {
		t.Errorf("totals: declared %d, breaks %d; want 2, 3", tot.Declared, tot.Breaks)
	}
}

// The provider's own clearing leaves the history alone: the short read of a response whose
// provider cleared more results than the one before is declared, not a break; the same short
// read with the same number cleared is one.
func TestProviderClearing(t *testing.T) {
	w := New(Options{})
	r := next(base(), 1)
	send := func(cleared int64, u message.Usage) []string {
		t.Helper()
		r = next(r, len(r.Messages))
		if got := w.Observe(r, sections); got != nil {
			t.Fatalf("observe reported %v: the history did not change", strs(got))
		}
		w.ProviderCleared(cleared)
		return strs(w.Report(u))
	}
	send(0, message.Usage{InputTokens: 10, CacheCreationInputTokens: 6000})
	// The provider starts clearing: the prompt it caches changed from the first result on.
	if got := send(3, message.Usage{InputTokens: 10, CacheReadInputTokens: 1200, CacheCreationInputTokens: 3000}); got != nil {
		t.Errorf("the provider's first clearing reported %v", got)
	}
	// One result more cleared: the prompt changed from that result on.
	if got := send(4, message.Usage{InputTokens: 10, CacheReadInputTokens: 3100, CacheCreationInputTokens: 900}); got != nil {
		t.Errorf("one result more cleared reported %v", got)
	}
	// The same results cleared: the whole previous prompt must be read.
	if got := send(4, message.Usage{InputTokens: 10, CacheReadInputTokens: 4010, CacheCreationInputTokens: 300}); got != nil {
		t.Errorf("a full read reported %v", got)
	}
	want := []string{"cache: read 1000 cached tokens, expected 4320 from the unchanged prefix"}
	if got := send(4, message.Usage{InputTokens: 10, CacheReadInputTokens: 1000, CacheCreationInputTokens: 3400}); !cmp.Equal(got, want) {
		t.Errorf("a short read with nothing more cleared: got %v, want %v", got, want)
	}
	if tot := w.Totals(); tot.Declared != 2 || tot.Breaks != 1 {
		t.Errorf("totals: declared %d, breaks %d; want 2, 1", tot.Declared, tot.Breaks)
	}
}
