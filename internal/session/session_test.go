package session

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/provider/connect"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/tool"
)

// counter is a tool that counts its runs, so tests can prove a retried request never re-ran it.
type counter struct{ n atomic.Int32 }

func (c *counter) tool() tool.Tool {
	return tool.New(tool.Spec[struct {
		Note string `json:"note"`
	}]{
		Name:        "Count",
		Description: "Counts how often it runs.",
		Schema:      json.RawMessage(`{"type":"object","properties":{"note":{"type":"string"}},"additionalProperties":false}`),
		IsReadOnly: func(struct {
			Note string `json:"note"`
		}) bool {
			return true
		},
		Run: func(ctx context.Context, env *tool.Env, in struct {
			Note string `json:"note"`
		}) tool.Result {
			c.n.Add(1)
			return tool.Text("counted " + in.Note)
		},
	})
}

// harness runs a session against a scripted server on loopback.
type harness struct {
	srv  *scripted.Server
	sess *Session
}

func newHarness(t *testing.T, sc *scripted.Scenario, opts Options) *harness {
	t.Helper()
	return newBenchHarness(t, sc, opts)
}

func newBenchHarness(t testing.TB, sc *scripted.Scenario, opts Options) *harness {
	t.Helper()
	srv, err := scripted.Start(t.Context(), "", sc, scripted.Options{})
	if err != nil {
		t.Fatalf("start scripted server: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	return newHarnessOn(t, srv, opts)
}

// newHarnessOn opens a session against a scripted server that is already running.
func newHarnessOn(t testing.TB, srv *scripted.Server, opts Options) *harness {
	t.Helper()
	prov, model, err := connect.Open(connect.Config{BaseURL: srv.URL(), APIKey: "test", Model: "claude-sonnet-4-5",
		Retry: &provider.RetryPolicy{Sleep: instant}}, func(string) string { return "" })
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	opts.Provider, opts.Model = prov, model
	if opts.Cwd == "" {
		opts.Cwd = t.TempDir()
	}
	if opts.Home == "" {
		opts.Home = t.TempDir()
	}
	opts.ManagedSettingsPath, opts.ManagedMemoryPath = "-", "-"
	sess, err := New(t.Context(), opts)
	if err != nil {
		t.Fatalf("new session: %v", err)
	}
	t.Cleanup(func() { sess.Close() })
	return &harness{srv: srv, sess: sess}
}

func (h *harness) send(t *testing.T, prompt string) []event.Event {
	t.Helper()
	var events []event.Event
	for e, err := range h.sess.Send(t.Context(), prompt) {
		if err != nil {
			t.Fatalf("send: %v", err)
		}
		events = append(events, e)
	}
	return events
}

func result(t *testing.T, events []event.Event) event.Result {
	t.Helper()
	for i := len(events) - 1; i >= 0; i-- {
		if r, ok := events[i].(event.Result); ok {
			return r
		}
	}
	t.Fatalf("no result event among %d events", len(events))
	return event.Result{}
}

func toolThenDone(extra ...scripted.Rule) *scripted.Scenario {
	rules := append(extra,
		scripted.Rule{Name: "call", When: scripted.Match{UserText: "go"}, Times: 1,
			Reply: []scripted.Block{scripted.Text("counting"), scripted.ToolUse("Count", map[string]string{"note": "x"})}},
		scripted.Rule{Name: "done", When: scripted.Match{ToolResult: "Count"}, Reply: []scripted.Block{scripted.Text("all done")}},
	)
	return &scripted.Scenario{Rules: rules}
}

func TestRetriedRequestNeverRerunsTool(t *testing.T) {
	tests := []struct {
		name     string
		fault    scripted.Rule
		attempts int // HTTP attempts for the first turn
	}{
		{"529 twice", scripted.Rule{Name: "overloaded", Times: 2, Fault: &scripted.Fault{Status: 529}}, 3},
		{"drop mid-stream", scripted.Rule{Name: "drop", When: scripted.Match{UserText: "go"}, Times: 1,
			Reply: []scripted.Block{scripted.Text("counting"), scripted.ToolUse("Count", map[string]string{"note": "x"})},
			Fault: &scripted.Fault{DropAfter: 4}}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &counter{}
			h := newHarness(t, toolThenDone(tt.fault), Options{Tools: []tool.Tool{c.tool()}})
			events := h.send(t, "go")
			res := result(t, events)
			if res.IsError || res.Text != "all done" {
				t.Fatalf("result = %+v, want success with \"all done\"", res)
			}
			if got := c.n.Load(); got != 1 {
				t.Errorf("tool ran %d times, want 1", got)
			}
			reqs := h.srv.Requests()
			if len(reqs) != tt.attempts+1 {
				t.Errorf("server saw %d requests, want %d for the first turn plus 1", len(reqs), tt.attempts)
			}
			retries := 0
			for _, e := range events {
				if _, ok := e.(event.Retry); ok {
					retries++
				}
			}
			if retries != tt.attempts-1 {
				t.Errorf("saw %d retry events, want %d", retries, tt.attempts-1)
			}
			hist := h.sess.History()
			if len(hist) != 4 {
				t.Fatalf("history has %d messages, want 4 (prompt, tool call, result, answer)", len(hist))
			}
			if got := len(hist[1].ToolUses()); got != 1 {
				t.Errorf("assistant turn carries %d tool calls, want 1 (no half-appended attempt)", got)
			}
		})
	}
}

func TestFiveTurnSessionReadsSharedPrefixFromCache(t *testing.T) {
	c := &counter{}
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "first", When: scripted.Match{UserText: "go"}, Times: 1,
			Reply: []scripted.Block{scripted.ToolUse("Count", map[string]string{"note": "1"})}},
		{Name: "again", When: scripted.Match{ToolResult: "Count"}, Times: 3,
			Reply: []scripted.Block{scripted.Text("more"), scripted.ToolUse("Count", map[string]string{"note": "n"})}},
		{Name: "done", When: scripted.Match{ToolResult: "Count"}, Reply: []scripted.Block{scripted.Text("done")}},
	}}
	h := newHarness(t, sc, Options{Tools: []tool.Tool{c.tool()}})
	res := result(t, h.send(t, "go"))
	if res.NumTurns != 5 {
		t.Fatalf("num turns = %d, want 5", res.NumTurns)
	}
	reqs := h.srv.Requests()
	for i, r := range reqs[1:] {
		shared, read := r.Cache.SharedPrefixTokens, r.Cache.CacheReadTokens
		if shared == 0 || float64(read) < 0.99*float64(shared) {
			t.Errorf("turn %d read %d of %d shared prefix tokens from the cache, want ≥99%%", i+2, read, shared)
		}
	}
	if res.Cache.Breaks != 0 {
		t.Errorf("cache breaks = %d, want 0", res.Cache.Breaks)
	}
}

func instant(ctx context.Context, _ time.Duration) error { return ctx.Err() }
