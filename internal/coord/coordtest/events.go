package coordtest

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/coord"
)

// eventsOf returns the handle's event logs, skipping backends without them.
func eventsOf(t *testing.T, b coord.Backend) coord.Events {
	t.Helper()
	el, ok := b.(coord.EventLog)
	if !ok {
		t.Skipf("%T has no event logs", b)
	}
	return el.Events()
}

func entry(s string) json.RawMessage { b, _ := json.Marshal(s); return b }

func entryTexts(t *testing.T, es []coord.Entry) []string {
	t.Helper()
	var out []string
	var last uint64
	for i, e := range es {
		if e.Seq <= last {
			t.Fatalf("entry %d has sequence %d after %d: a log's sequence must grow", i, e.Seq, last)
		}
		last = e.Seq
		var s string
		if err := json.Unmarshal(e.Data, &s); err != nil {
			t.Fatalf("entry %d: data %s: %v", i, e.Data, err)
		}
		out = append(out, s)
	}
	return out
}

func appendEvents(t *testing.T, ev coord.Events, member string, texts ...string) {
	t.Helper()
	var data []json.RawMessage
	for _, s := range texts {
		data = append(data, entry(s))
	}
	if err := ev.Append(ctxOf(t), member, data...); err != nil {
		t.Fatalf("append %v to %s: %v", texts, member, err)
	}
}

func readEvents(t *testing.T, ev coord.Events, member string, after uint64, max int) []coord.Entry {
	t.Helper()
	return must[[]coord.Entry](t, "read events of "+member)(ev.Read(ctxOf(t), member, after, max))
}

func testEventsAppendRead(t *testing.T, s *store) {
	w, r := eventsOf(t, s.handle(t)), eventsOf(t, s.handle(t))
	if got := readEvents(t, r, "alice", 0, 0); len(got) != 0 {
		t.Fatalf("a log never written has %d entries", len(got))
	}
	if last := must[uint64](t, "last of an empty log")(r.Last(ctxOf(t), "alice")); last != 0 {
		t.Fatalf("the last entry of a log never written is %d, want 0", last)
	}
	appendEvents(t, w, "alice", "e1", "e2")
	appendEvents(t, w, "alice", "e3")
	appendEvents(t, w, "bob", "b1")
	appendEvents(t, w, "alice", "e4", "e5")
	all := readEvents(t, r, "alice", 0, 0)
	if diff := cmp.Diff([]string{"e1", "e2", "e3", "e4", "e5"}, entryTexts(t, all)); diff != "" {
		t.Fatalf("alice's log mismatch (-want +got):\n%s", diff)
	}
	if !all[0].Time.Equal(s.clock.Now()) {
		t.Errorf("entry time %v, want the appender's clock %v", all[0].Time, s.clock.Now())
	}
	if diff := cmp.Diff([]string{"e4", "e5"}, entryTexts(t, readEvents(t, r, "alice", all[2].Seq, 0))); diff != "" {
		t.Errorf("read after the third entry mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"e1", "e2"}, entryTexts(t, readEvents(t, r, "alice", 0, 2))); diff != "" {
		t.Errorf("read of at most two mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"b1"}, entryTexts(t, readEvents(t, r, "bob", 0, 0))); diff != "" {
		t.Errorf("bob's log mismatch (-want +got):\n%s", diff)
	}
	if last := must[uint64](t, "last of alice's log")(r.Last(ctxOf(t), "alice")); last != all[4].Seq {
		t.Errorf("Last = %d, want the fifth entry's %d", last, all[4].Seq)
	}
	if got := readEvents(t, r, "alice", all[4].Seq, 0); len(got) != 0 {
		t.Errorf("read after the last entry returned %v", entryTexts(t, got))
	}
}

// A follower that reads as entries arrive from two appending handles sees each entry once,
// in one growing sequence.
func testEventsFollow(t *testing.T, s *store) {
	w1, w2, r := eventsOf(t, s.handle(t)), eventsOf(t, s.handle(t)), eventsOf(t, s.handle(t))
	const rounds = 40
	var wg sync.WaitGroup
	for i, w := range []coord.Events{w1, w2} {
		wg.Go(func() {
			for j := range rounds {
				if err := w.Append(ctxOf(t), "alice", entry(fmt.Sprintf("w%d-%02d", i, j))); err != nil {
					t.Errorf("append: %v", err)
					return
				}
			}
		})
	}
	var got []string
	var after uint64
	follow := func() {
		es := readEvents(t, r, "alice", after, 7)
		got = append(got, entryTexts(t, es)...)
		if len(es) > 0 {
			if es[0].Seq <= after {
				t.Fatalf("read after %d returned sequence %d", after, es[0].Seq)
			}
			after = es[len(es)-1].Seq
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		follow()
	}
	for before := -1; before != len(got); {
		before = len(got)
		follow()
	}
	if len(got) != 2*rounds {
		t.Fatalf("the follower saw %d entries, want %d: %v", len(got), 2*rounds, got)
	}
	seen := map[string]bool{}
	next := [2]int{}
	for _, g := range got {
		if seen[g] {
			t.Fatalf("entry %s seen twice", g)
		}
		seen[g] = true
		var i, j int
		if _, err := fmt.Sscanf(g, "w%d-%d", &i, &j); err != nil || j != next[i] {
			t.Fatalf("entry %s out of its appender's order (want w%d-%02d)", g, i, next[i])
		}
		next[i]++
	}
}

// A log keeps at most its budget of entries — the newest, and at least half the budget.
func testEventsBound(t *testing.T, s *store) {
	const budget = 10
	b := s.handleWith(t, coord.Config{Limits: coord.Limits{EventEntries: budget}})
	ev := eventsOf(t, b)
	var want []string
	for i := range 47 {
		text := fmt.Sprintf("e%02d", i)
		want = append(want, text)
		appendEvents(t, ev, "alice", text)
	}
	appendEvents(t, ev, "alice", "e47", "e48", "e49")
	want = append(want, "e47", "e48", "e49")
	var batch []string
	for i := 50; i < 50+budget+3; i++ {
		batch = append(batch, fmt.Sprintf("e%02d", i))
	}
	appendEvents(t, ev, "alice", batch...) // one append larger than the budget
	want = append(want, batch...)
	r := eventsOf(t, s.handle(t))
	kept := readEvents(t, r, "alice", 0, 0)
	got := entryTexts(t, kept)
	if last := must[uint64](t, "last of a full log")(r.Last(ctxOf(t), "alice")); len(kept) > 0 && last != kept[len(kept)-1].Seq {
		t.Errorf("Last = %d, want the newest entry's %d", last, kept[len(kept)-1].Seq)
	}
	if len(got) > budget || len(got) < budget/2 {
		t.Fatalf("the log kept %d entries, want between %d and %d: %v", len(got), budget/2, budget, got)
	}
	if diff := cmp.Diff(want[len(want)-len(got):], got); diff != "" {
		t.Errorf("the log kept other than the newest entries (-want +got):\n%s", diff)
	}
}

func testEventsWatch(t *testing.T, s *store) {
	ctx := ctxOf(t)
	w, r := eventsOf(t, s.handle(t)), eventsOf(t, s.handle(t))
	ch := must[<-chan struct{}](t, "watch alice's events")(r.Watch(ctx, "alice"))
	appendEvents(t, w, "alice", "e1")
	signalled(t, "a watch of alice's log after an append", ch)
	if got := entryTexts(t, readEvents(t, r, "alice", 0, 0)); len(got) != 1 {
		t.Errorf("after the signal the log has %v", got)
	}
}

func testEventsInvalid(t *testing.T, s *store) {
	ctx := ctxOf(t)
	b := s.handleWith(t, coord.Config{Limits: coord.Limits{MessageBytes: 100}})
	ev := eventsOf(t, b)
	wantErr(t, "append to a bad member name", ev.Append(ctx, "no/slash", entry("x")), coord.ErrInvalid)
	wantErr(t, "append of text that is not JSON", ev.Append(ctx, "alice", json.RawMessage("{nope")), coord.ErrInvalid)
	wantErr(t, "append of an oversize entry", ev.Append(ctx, "alice", entry("small"), entry(strings.Repeat("x", 200))), coord.ErrTooLarge)
	if got := readEvents(t, ev, "alice", 0, 0); len(got) != 0 {
		t.Errorf("a refused append stored %v", entryTexts(t, got))
	}
	if _, err := ev.Read(ctx, "../x", 0, 0); err == nil {
		t.Error("read of a bad member name: no error")
	}
}
