package compact

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync"
	"testing"

	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/models"
	"github.com/keel-dev/keel/internal/provider"
)

// windows is a catalog of context windows by model; a model it lacks has the default.
type windows map[string]int64

func (w windows) ContextWindow(model string) int64 {
	if n, ok := w[model]; ok {
		return n
	}
	return models.DefaultContextWindow
}

var _ Windows = (*models.Catalog)(nil)

func TestPolicyThresholdFollowsTheModel(t *testing.T) {
	w := windows{"big": 1_000_000, "small": 100_000}
	for _, tc := range []struct {
		name   string
		policy Policy
		model  string
		want   int64
	}{
		{"the model's own window, at the default share", Policy{Windows: w}, "big", 850_000},
		{"another model of the same session", Policy{Windows: w}, "small", 85_000},
		{"a model the catalog lacks", Policy{Windows: w}, "local-llama", models.DefaultContextWindow * DefaultPercent / 100},
		{"the autoCompactThreshold setting", Policy{Windows: w, Percent: 50}, "big", 500_000},
		{"a given window wins over the model's", Policy{Windows: w, Window: 30_000}, "big", 25_500},
		{"a given window, with the setting", Policy{Windows: w, Window: 30_000, Percent: 50}, "small", 15_000},
		{"a negative setting is the default", Policy{Windows: w, Percent: -1}, "small", 85_000},
	} {
		if got := tc.policy.Threshold(tc.model); got != tc.want {
			t.Errorf("%s: Threshold(%q) = %d, want %d", tc.name, tc.model, got, tc.want)
		}
	}
	builtins := Policy{Windows: models.Builtins()}
	if got, want := builtins.Threshold("claude-haiku-4-5"), int64(170_000); got != want {
		t.Errorf("with the built-in catalog, Haiku 4.5 compacts at %d, want %d", got, want)
	}
}

// compactionRequest is a request as a compaction sends it: it repeats a conversation whose
// previous request ended at message 2, and adds the summary prompt.
func compactionRequest(source string) *provider.Request {
	return &provider.Request{
		System:   []provider.SystemBlock{{Text: "static"}, {Text: "dynamic"}},
		Tools:    []provider.ToolSpec{{Name: "Read"}, {Name: "Bash"}},
		Messages: []message.Message{message.User(message.Text("u1")), message.Assistant(message.Text("a1")), message.User(message.Text("u2")), message.User(message.Text(Prompt))},
		Source:   provider.SourceCompact, CacheSource: source, SkipCacheWrite: true,
		SharedPrefix: &provider.BlockRef{Message: 2, Block: 0},
	}
}

func TestPolicyBreakpointsReadTheConversationsCacheAndWriteNone(t *testing.T) {
	ttl, _ := provider.NewTTLPolicy([]string{"main"})
	for _, tc := range []struct{ source, want string }{{"main", provider.TTL1h}, {"agent:explore", ""}} {
		req := compactionRequest(tc.source)
		Policy{TTL: ttl}.Breakpoints(req)
		marked := func(cc *message.CacheControl) bool { return cc != nil && cc.TTL == tc.want }
		if !marked(req.System[0].CacheControl) || req.System[1].CacheControl != nil {
			t.Errorf("%s: system markers %+v %+v, want the static block only, TTL %q", tc.source, req.System[0].CacheControl, req.System[1].CacheControl, tc.want)
		}
		if !marked(req.Tools[1].CacheControl) || req.Tools[0].CacheControl != nil {
			t.Errorf("%s: tool markers, want the last tool only", tc.source)
		}
		if !marked(req.Messages[2].Content[0].CacheControl) {
			t.Errorf("%s: the end of the shared prefix is unmarked", tc.source)
		}
		if req.Messages[3].Content[0].CacheControl != nil || req.Messages[1].Content[0].CacheControl != nil {
			t.Errorf("%s: a compaction request marks a block of its own", tc.source)
		}
	}
}

// recorder is a provider that answers every request with one summary and keeps the requests.
type recorder struct {
	mu       sync.Mutex
	requests []*provider.Request
}

func (r *recorder) Stream(_ context.Context, req *provider.Request) iter.Seq2[provider.Event, error] {
	r.mu.Lock()
	r.requests = append(r.requests, req)
	r.mu.Unlock()
	return func(yield func(provider.Event, error) bool) {
		yield(provider.Done{Message: message.Assistant(message.Text("SUMMARY")), Usage: message.Usage{InputTokens: 10}}, nil)
	}
}

func (r *recorder) sent() []*provider.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

// TestCompactionMarksTheLongestSharedPrefix: the compaction request repeats the newest
// request's system prompt and tools and places its breakpoint at the end of what that
// request sent, the longest prefix the two share, through the policy's breakpoints.
func TestCompactionMarksTheLongestSharedPrefix(t *testing.T) {
	ttl, _ := provider.NewTTLPolicy([]string{"main"})
	sent := []message.Message{message.User(message.Text("u1")), message.Assistant(message.Text("a1")), message.User(message.Text("u2"), message.Text("note"))}
	clearing := &provider.ToolResultClearing{Trigger: 10_000, Keep: 2}
	last := &loop.CacheSafe{Model: "m", System: loop.System{Blocks: []provider.SystemBlock{{Text: "static"}}}, Tools: []provider.ToolSpec{{Name: "Read"}},
		Messages: append(append([]message.Message(nil), sent...), message.Assistant(message.Text("a2"))), ClearToolResults: clearing}
	p := &recorder{}
	c := New(Config{Provider: p, Model: func() string { return "m" }, Last: func() *loop.CacheSafe { return last },
		Breakpoints: Policy{TTL: ttl}.Breakpoints, CacheSource: "main"})
	history := append(append([]message.Message(nil), last.Messages...), message.User(message.Text("u3")))
	out, _, err := c.Compact(context.Background(), history, "auto")
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].TextOf() != SummaryMessage("SUMMARY").TextOf() {
		t.Errorf("history after compaction = %+v", out)
	}
	req := p.sent()[0]
	if req.SharedPrefix == nil || *req.SharedPrefix != (provider.BlockRef{Message: 2, Block: 1}) {
		t.Fatalf("shared prefix = %+v, want the last block of the newest request's last message", req.SharedPrefix)
	}
	if cc := req.Messages[2].Content[1].CacheControl; cc == nil || cc.TTL != provider.TTL1h {
		t.Errorf("the end of the shared prefix carries %+v, want a one-hour marker", cc)
	}
	if n := len(req.Messages); req.Messages[n-1].Content[len(req.Messages[n-1].Content)-1].CacheControl != nil {
		t.Errorf("the compaction request marks its own newest block")
	}
	if req.System[0].Text != "static" || req.Tools[0].Name != "Read" || !req.SkipCacheWrite {
		t.Errorf("request = %+v, want the newest request's system and tools, writing nothing", req)
	}
	// The provider cleared old results from the prompt it cached: the summary request asks
	// for the same clearing, or it would not share that prefix.
	if req.ClearToolResults != clearing {
		t.Errorf("ClearToolResults = %+v, want the newest request's %+v", req.ClearToolResults, clearing)
	}
}

func TestManualCompaction(t *testing.T) {
	p := &recorder{}
	var triggers []string
	c := New(Config{Provider: p, Model: func() string { return "m" },
		Before: func(_ context.Context, trigger string) []string { triggers = append(triggers, trigger); return nil }})
	if _, _, err := c.Manual(context.Background(), nil, "the tests"); !errors.Is(err, ErrNothingToCompact) || err.Error() != "nothing to compact yet" {
		t.Errorf("empty history: err = %v, want ErrNothingToCompact", err)
	}
	if len(p.sent()) != 0 {
		t.Errorf("an empty history sent a compaction request")
	}
	// Room to grow in place: Manual must not write the instructions into it.
	history := make([]message.Message, 2, 4)
	history[0], history[1] = message.User(message.Text("fix it")), message.Assistant(message.Text("fixed"))
	out, used, err := c.Manual(context.Background(), history, "the tests")
	if err != nil {
		t.Fatal(err)
	}
	if u, _, _, _ := used.Total(); len(out) != 1 || u.InputTokens != 10 {
		t.Errorf("out = %+v, used = %+v", out, used)
	}
	if len(triggers) != 1 || triggers[0] != "manual" {
		t.Errorf("triggers = %q, want one manual compaction", triggers)
	}
	msgs := p.sent()[0].Messages
	text := msgs[len(msgs)-1].TextOf()
	focus := strings.Index(text, "When summarising, focus on: the tests")
	if focus < 0 || focus > strings.Index(text, Prompt) {
		t.Errorf("the request's last message = %q, want the instructions before the summary prompt", text)
	}
	if history[:3][2].Role != "" {
		t.Errorf("Manual wrote the instructions into the caller's history")
	}
}
