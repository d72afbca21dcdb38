package maincompact

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/compact"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
)

type windows map[string]int64

func (w windows) ContextWindow(model string) int64 { return w[model] }

// TestThresholdFollowsTheSettingsNow: the threshold is the share of the model's window the
// autoCompactThreshold setting names (85% unset), read again at each call, and an
// embedder's window wins over the catalog's.
func TestThresholdFollowsTheSettingsNow(t *testing.T) {
	model, window := "small", int64(0)
	percent, set := 0.0, false
	m := New(Config{
		Windows: windows{"small": 30_000, "big": 200_000},
		Window:  func() int64 { return window },
		Percent: func() (float64, bool) { return percent, set },
		Model:   func() string { return model },
	})
	if got := m.Threshold(); got != 25_500 {
		t.Errorf("default threshold on a 30k window = %d, want 25,500", got)
	}
	percent, set = 50, true
	if got := m.Threshold(); got != 15_000 {
		t.Errorf("50%% of 30k = %d", got)
	}
	model = "big"
	if got := m.Threshold(); got != 100_000 {
		t.Errorf("after a model switch = %d, want 100,000", got)
	}
	if got := m.ThresholdFor("small"); got != 15_000 {
		t.Errorf("ThresholdFor(small) = %d", got)
	}
	window = 10_000
	if got := m.Threshold(); got != 5_000 {
		t.Errorf("with an embedder's 10k window = %d, want 5,000", got)
	}
}

// steps records the order of the steps around a compaction.
type steps struct{ did []string }

func (s *steps) add(step string) { s.did = append(s.did, step) }

func stepsConfig(s *steps, recordErr error) Config {
	return Config{
		PreCompact: func(_ context.Context, trigger string) []string {
			s.add("pre:" + trigger)
			return []string{"keep the plan"}
		},
		RecordSummary: func(_ context.Context, summary string) (string, error) {
			s.add("record:" + summary)
			return "b-1", recordErr
		},
		ForgetViews:  func() { s.add("forget") },
		PostCompact:  func(_ context.Context, trigger, summary string) { s.add("post:" + trigger + ":" + summary) },
		ClearPrompt:  func() { s.add("clear-prompt") },
		SessionStart: func(context.Context) { s.add("session-start") },
	}
}

// TestMainStepsAroundACompaction: the PreCompact hooks' context is returned for the prompt;
// the boundary is recorded before the run's ids restart at it; after it the views are
// forgotten, PostCompact runs, the prompt starts over, SessionStart runs and the listing
// restarts from the summary — in that order. A boundary that cannot be recorded fails the
// compaction and leaves the run's ids.
func TestMainStepsAroundACompaction(t *testing.T) {
	s := &steps{}
	m := New(stepsConfig(s, nil))
	var reset []message.Message
	run := Run{Compacted: func(b string) { s.add("compacted:" + b) }, Reset: func(h []message.Message) { reset = h; s.add("reset") }}
	c := m.Main(run)
	ctx := context.Background()
	if got := c.Before(ctx, "auto"); !slices.Equal(got, []string{"keep the plan"}) {
		t.Errorf("Before = %q", got)
	}
	if id, err := c.Record(ctx, "SUM"); id != "b-1" || err != nil {
		t.Errorf("Record = %q, %v", id, err)
	}
	c.After(ctx, "auto", "SUM", "b-1")
	want := []string{"pre:auto", "record:SUM", "compacted:b-1", "forget", "post:auto:SUM", "clear-prompt", "session-start", "reset"}
	if !slices.Equal(s.did, want) {
		t.Errorf("steps\n got %q\nwant %q", s.did, want)
	}
	if len(reset) != 1 || reset[0].TextOf() != compact.SummaryMessage("SUM").TextOf() {
		t.Errorf("listing reset with %+v", reset)
	}

	bad := &steps{}
	failing := New(stepsConfig(bad, errors.New("disk full"))).Main(Run{Compacted: func(b string) { bad.add("compacted:" + b) }})
	if _, err := failing.Record(ctx, "SUM"); err == nil || slices.Contains(bad.did, "compacted:b-1") {
		t.Errorf("a failed record: err %v, steps %q", err, bad.did)
	}
}

// history is a conversation held as the session holds it.
type history struct {
	msgs []message.Message
	ids  []string
}

func historyConfig(h *history, s *steps) Config {
	c := stepsConfig(s, nil)
	c.History = func() []message.Message { return slices.Clone(h.msgs) }
	c.SetHistory = func(m []message.Message, ids []string) { h.msgs, h.ids = m, ids; s.add("set") }
	c.Rewind = func(context.Context) error { s.add("rewind"); return nil }
	c.Announce = func(reason string) { s.add("announce:" + reason) }
	return c
}

// TestClear: /clear empties the history and its ids, forgets the views, moves the
// transcript's branch to its start, tells the cache watcher and starts the prompt over; a
// prompt that is no command is left to the model.
func TestClear(t *testing.T) {
	h := &history{msgs: []message.Message{message.User(message.Text("hi"))}, ids: []string{"u1"}}
	s := &steps{}
	m := New(historyConfig(h, s))
	ok, _, err := m.Command(context.Background(), "  /clear ", Run{})
	if !ok || err != nil || h.msgs != nil || h.ids != nil {
		t.Fatalf("/clear: %v, %v, history %+v %v", ok, err, h.msgs, h.ids)
	}
	if want := []string{"set", "forget", "rewind", "announce:clear", "clear-prompt"}; !slices.Equal(s.did, want) {
		t.Errorf("steps %q, want %q", s.did, want)
	}
	c := historyConfig(h, &steps{})
	c.Rewind = func(context.Context) error { return errors.New("read-only") }
	if _, _, err := New(c).Command(context.Background(), "/clear", Run{}); err == nil {
		t.Error("a transcript that cannot rewind did not fail /clear")
	}
	if ok, _, _ := m.Command(context.Background(), "/clearly not a command", Run{}); ok {
		t.Error("a prompt was taken for /clear")
	}
}

// TestAddDir: /add-dir adds the directory and says so; a refusal is the command's error,
// with no notice.
func TestAddDir(t *testing.T) {
	var events []event.Event
	c := Config{AddDir: func(_ context.Context, dir string) (string, error) {
		if dir == "missing" {
			return "", errors.New("no such directory")
		}
		return "/abs/" + dir, nil
	}}
	m := New(c)
	run := Run{Emit: func(e event.Event) { events = append(events, e) }}
	if ok, _, err := m.Command(context.Background(), "/add-dir  lib ", run); !ok || err != nil {
		t.Fatalf("/add-dir lib: %v, %v", ok, err)
	}
	if len(events) != 1 || !strings.Contains(events[0].(event.Notice).Text, "added /abs/lib") {
		t.Errorf("events %+v", events)
	}
	if ok, _, err := m.Command(context.Background(), "/add-dir missing", run); !ok || err == nil || len(events) != 1 {
		t.Errorf("/add-dir missing: %v, %v, events %+v", ok, err, events)
	}
}

// summarizer answers every request with one summary, and keeps the requests.
type summarizer struct{ reqs []*provider.Request }

func (p *summarizer) Stream(_ context.Context, req *provider.Request) iter.Seq2[provider.Event, error] {
	p.reqs = append(p.reqs, req)
	return func(yield func(provider.Event, error) bool) {
		yield(provider.Done{Message: message.Assistant(message.Text("SUM")), StopReason: message.StopEndTurn,
			Usage: message.Usage{InputTokens: 100, OutputTokens: 10}, Model: req.Model}, nil)
	}
}

// TestCompactCommand: /compact summarises the history with the instructions, through the
// steps around a compaction, and makes the summary the history, with the run's ids
// starting at the boundary; an empty history has nothing to compact.
func TestCompactCommand(t *testing.T) {
	h := &history{msgs: []message.Message{message.User(message.Text("build it")), message.Assistant(message.Text("built"))}, ids: []string{"u1", "a1"}}
	s := &steps{}
	c := historyConfig(h, s)
	p := &summarizer{}
	c.Provider, c.Model = p, func() string { return "m" }
	var ids []string
	var events []event.Event
	run := Run{Compacted: func(b string) { ids = []string{b} }, IDs: func() []string { return ids },
		Emit: func(e event.Event) { events = append(events, e) }}
	ok, _, err := New(c).Command(context.Background(), "/compact the API", run)
	if !ok || err != nil {
		t.Fatalf("/compact: %v, %v", ok, err)
	}
	if len(p.reqs) != 1 || !strings.Contains(lastText(p.reqs[0].Messages), "focus on: the API") {
		t.Errorf("the request did not carry the instructions: %+v", p.reqs)
	}
	if len(h.msgs) != 1 || !strings.Contains(h.msgs[0].TextOf(), "SUM") || !slices.Equal(h.ids, []string{"b-1"}) {
		t.Errorf("history after /compact: %+v, ids %v", h.msgs, h.ids)
	}
	for _, step := range []string{"pre:manual", "record:SUM", "post:manual:SUM", "session-start", "set"} {
		if !slices.Contains(s.did, step) {
			t.Errorf("no %s step in %q", step, s.did)
		}
	}
	empty := &history{}
	c2 := historyConfig(empty, &steps{})
	c2.Provider, c2.Model = p, func() string { return "m" }
	if _, _, err := New(c2).Command(context.Background(), "/compact", run); !errors.Is(err, compact.ErrNothingToCompact) {
		t.Errorf("/compact of nothing: %v", err)
	}
}

func lastText(msgs []message.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.TextOf())
	}
	return b.String()
}
