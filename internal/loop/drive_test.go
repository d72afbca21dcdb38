package loop

import (
	"context"
	"sync"
	"testing"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/provider/anthropic"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

// recordSink keeps what the driver records and shows.
type recordSink struct {
	mu       sync.Mutex
	appended []string
	shown    []string
}

func (k *recordSink) Emit(e event.Event) {
	if u, ok := e.(event.UserMessage); ok {
		k.mu.Lock()
		k.shown = append(k.shown, u.Message.TextOf())
		k.mu.Unlock()
	}
}

func (k *recordSink) Append(_ context.Context, m message.Message) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.appended = append(k.appended, string(m.Role)+":"+m.TextOf())
	return "u", nil
}

func (k *recordSink) EndTurn(context.Context) error { return nil }

// twoMessages is a cycle that starts a run for each of its messages, then stops.
type twoMessages struct {
	left  []string
	saw   []Ran
	first bool
}

func (c *twoMessages) Next(_ context.Context, ran Ran) (message.Message, bool) {
	if ran.Out == nil {
		c.first = true
	}
	c.saw = append(c.saw, ran)
	if len(c.left) == 0 {
		return message.Message{}, false
	}
	next := c.left[0]
	c.left = c.left[1:]
	return message.User(message.Text(next)), true
}

// The driver records the fresh messages, runs, adds the runs up, and records and shows each
// message the cycle gives before running on it; a history ending with the model's turn asks
// the cycle first.
func TestDrive(t *testing.T) {
	srv, err := scripted.Start(t.Context(), "", &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "tool"}, Times: 1, Reply: []scripted.Block{scripted.Text("calling"), scripted.ToolUse("Nope", map[string]string{})}},
		{Reply: []scripted.Block{scripted.Text("ok")}},
	}}, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	p, err := anthropic.New(anthropic.Options{APIKey: "k", BaseURL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	sink := &recordSink{}
	agent := &Agent{Provider: provider.WithRetries(p, provider.RetryPolicy{}, nil), Model: "claude-test", Sink: sink}
	start := []message.Message{message.User(message.Text("first"))}
	cycle := &twoMessages{left: []string{"use a tool", "third"}}
	ran, err := Drive(t.Context(), agent, start, start, cycle)
	if err != nil {
		t.Fatal(err)
	}
	if ran.Turns != 4 || ran.ToolUses != 1 || len(cycle.saw) != 3 || cycle.first {
		t.Errorf("turns %d, tool uses %d, cycle asked %d times (first %v); want 4, 1, 3, false", ran.Turns, ran.ToolUses, len(cycle.saw), cycle.first)
	}
	if ran.Usage.OutputTokens == 0 || ran.Ledger.Models() == nil {
		t.Errorf("usage not added up: %+v", ran.Usage)
	}
	if got := sink.shown; len(got) < 2 || got[0] != "use a tool" {
		t.Errorf("shown user messages %q; want the cycle's, first \"use a tool\"", got)
	}
	if sink.appended[0] != "user:first" {
		t.Errorf("the fresh message was not recorded first: %q", sink.appended)
	}

	// A history that ends with the model's turn: the cycle is asked before any run.
	resumed := &twoMessages{left: []string{"wake up"}}
	ran, err = Drive(t.Context(), agent, append(start, message.Assistant(message.Text("done"))), nil, resumed)
	if err != nil || !resumed.first || ran.Turns != 1 {
		t.Errorf("resumed drive: %v, asked first %v, turns %d", err, resumed.first, ran.Turns)
	}
}
