package scripted

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// blk is a text block of exactly tokens tokens: its canonical JSON {"text":"…","type":"text"}
// is 25 bytes plus the text, so a text of 4*tokens-25 bytes counts tokens tokens.
type blk struct {
	fill   byte
	tokens int
	ttl    string // "" none, "5m", "1h"
}

func (b blk) json() map[string]any {
	m := map[string]any{"type": "text", "text": strings.Repeat(string(b.fill), 4*b.tokens-25)}
	if b.ttl != "" {
		m["cache_control"] = map[string]any{"type": "ephemeral", "ttl": b.ttl}
	}
	return m
}

// req builds a request: system blocks, then messages alternating user / assistant, each a
// list of blocks.
func req(model string, system []blk, messages ...[]blk) map[string]any {
	var sys []any
	for _, b := range system {
		sys = append(sys, b.json())
	}
	var ms []any
	for i, m := range messages {
		var content []any
		for _, b := range m {
			content = append(content, b.json())
		}
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		ms = append(ms, map[string]any{"role": role, "content": content})
	}
	return map[string]any{"model": model, "max_tokens": 100, "system": sys, "messages": ms}
}

// fakeClock is the injectable clock of cache TTLs.
type fakeClock struct {
	mu  sync.Mutex // guards now
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestCacheAccounting(t *testing.T) {
	sys := blk{'S', 1100, "5m"}
	sys1h := blk{'S', 1100, "1h"}
	u1 := blk{'a', 100, "5m"}
	u1plain := blk{'a', 100, ""}
	a1 := blk{'b', 50, ""}
	u2 := blk{'c', 60, "5m"}
	q := blk{'q', 10, ""}
	type step struct {
		advance time.Duration
		body    map[string]any
		want    CacheAccount // Model and InputTokens are filled in by the test
	}
	tests := []struct {
		name  string
		cfg   CacheConfig
		steps []step
	}{
		{
			name: "hit on the next turn",
			steps: []step{
				{0, req("m", []blk{sys}, []blk{u1}), CacheAccount{Breakpoints: 2, CacheCreationTokens: 1200, CacheCreation5m: 1200}},
				{time.Minute, req("m", []blk{sys}, []blk{u1plain}, []blk{a1}, []blk{u2}),
					CacheAccount{Breakpoints: 2, CacheReadTokens: 1200, CacheCreationTokens: 110, CacheCreation5m: 110, SharedPrefixTokens: 1200}},
			},
		},
		{
			name: "a changed system prompt misses",
			steps: []step{
				{0, req("m", []blk{sys}, []blk{u1}), CacheAccount{Breakpoints: 2, CacheCreationTokens: 1200, CacheCreation5m: 1200}},
				{0, req("m", []blk{{'X', 1100, "5m"}}, []blk{u1}), CacheAccount{Breakpoints: 2, CacheCreationTokens: 1200, CacheCreation5m: 1200}},
			},
		},
		{
			name: "a changed message falls back to the system breakpoint",
			steps: []step{
				{0, req("m", []blk{sys}, []blk{u1plain}, []blk{a1}, []blk{u2}), CacheAccount{Breakpoints: 2, CacheCreationTokens: 1310, CacheCreation5m: 1310}},
				{0, req("m", []blk{sys}, []blk{u1plain}, []blk{{'z', 50, ""}}, []blk{u2}),
					CacheAccount{Breakpoints: 2, CacheReadTokens: 1100, CacheCreationTokens: 210, CacheCreation5m: 210, SharedPrefixTokens: 1200}},
			},
		},
		{
			name: "5m entries expire",
			steps: []step{
				{0, req("m", []blk{sys}, []blk{q}), CacheAccount{Breakpoints: 1, CacheCreationTokens: 1100, CacheCreation5m: 1100, UncachedTokens: 10}},
				{5 * time.Minute, req("m", []blk{sys}, []blk{q}), CacheAccount{Breakpoints: 1, CacheCreationTokens: 1100, CacheCreation5m: 1100, UncachedTokens: 10, SharedPrefixTokens: 1110}},
			},
		},
		{
			name: "a hit refreshes the TTL",
			steps: []step{
				{0, req("m", []blk{sys}, []blk{q}), CacheAccount{Breakpoints: 1, CacheCreationTokens: 1100, CacheCreation5m: 1100, UncachedTokens: 10}},
				{4 * time.Minute, req("m", []blk{sys}, []blk{q}), CacheAccount{Breakpoints: 1, CacheReadTokens: 1100, UncachedTokens: 10, SharedPrefixTokens: 1110}},
				{4 * time.Minute, req("m", []blk{sys}, []blk{q}), CacheAccount{Breakpoints: 1, CacheReadTokens: 1100, UncachedTokens: 10, SharedPrefixTokens: 1110}},
			},
		},
		{
			name: "1h entries outlive 5 minutes, not an hour",
			steps: []step{
				{0, req("m", []blk{sys1h}, []blk{u1}), CacheAccount{Breakpoints: 2, CacheCreationTokens: 1200, CacheCreation1h: 1100, CacheCreation5m: 100}},
				{30 * time.Minute, req("m", []blk{sys1h}, []blk{{'q', 30, ""}}),
					CacheAccount{Breakpoints: 1, CacheReadTokens: 1100, UncachedTokens: 30, SharedPrefixTokens: 1100}},
				{61 * time.Minute, req("m", []blk{sys1h}, []blk{q}), CacheAccount{Breakpoints: 1, CacheCreationTokens: 1100, CacheCreation1h: 1100, UncachedTokens: 10, SharedPrefixTokens: 1100}},
			},
		},
		{
			name: "prefixes under the minimum are not cached",
			steps: []step{
				{0, req("m", []blk{{'S', 500, "5m"}}, []blk{u1}), CacheAccount{Breakpoints: 2, UncachedTokens: 600}},
				{0, req("m", []blk{{'S', 500, "5m"}}, []blk{u1}), CacheAccount{Breakpoints: 2, UncachedTokens: 600, SharedPrefixTokens: 600}},
			},
		},
		{
			name: "a lower configured minimum caches them",
			cfg:  CacheConfig{MinTokens: 512},
			steps: []step{
				{0, req("m", []blk{{'S', 500, "5m"}}, []blk{u1}), CacheAccount{Breakpoints: 2, CacheCreationTokens: 600, CacheCreation5m: 600}},
				{0, req("m", []blk{{'S', 500, "5m"}}, []blk{u1}), CacheAccount{Breakpoints: 2, CacheReadTokens: 600, SharedPrefixTokens: 600}},
			},
		},
		{
			name: "cache is keyed by model",
			steps: []step{
				{0, req("m", []blk{sys}, []blk{q}), CacheAccount{Breakpoints: 1, CacheCreationTokens: 1100, CacheCreation5m: 1100, UncachedTokens: 10}},
				{0, req("other", []blk{sys}, []blk{q}), CacheAccount{Breakpoints: 1, CacheCreationTokens: 1100, CacheCreation5m: 1100, UncachedTokens: 10}},
			},
		},
		{
			name: "lookback finds an entry 19 blocks back",
			steps: []step{
				{0, req("m", []blk{{'S', 1100, ""}}, []blk{u1}), CacheAccount{Breakpoints: 1, CacheCreationTokens: 1200, CacheCreation5m: 1200}},
				{0, req("m", []blk{{'S', 1100, ""}}, []blk{u1plain}, manyBlocks(18, 10), []blk{u2}),
					CacheAccount{Breakpoints: 1, CacheReadTokens: 1200, CacheCreationTokens: 240, CacheCreation5m: 240, SharedPrefixTokens: 1200}},
			},
		},
		{
			name: "lookback does not reach 20 blocks back",
			steps: []step{
				{0, req("m", []blk{{'S', 1100, ""}}, []blk{u1}), CacheAccount{Breakpoints: 1, CacheCreationTokens: 1200, CacheCreation5m: 1200}},
				{0, req("m", []blk{{'S', 1100, ""}}, []blk{u1plain}, manyBlocks(19, 10), []blk{u2}),
					CacheAccount{Breakpoints: 1, CacheCreationTokens: 1450, CacheCreation5m: 1450, SharedPrefixTokens: 1200}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			s := start(t, &Scenario{Cache: tt.cfg}, Options{Now: clock.Now})
			for i, st := range tt.steps {
				clock.advance(st.advance)
				resp, body := post(t, s, "/v1/messages", st.body)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("step %d: status %d: %s", i+1, resp.StatusCode, body)
				}
				got := s.Requests()[i].Cache
				want := st.want
				want.Model = st.body["model"].(string)
				want.InputTokens = want.CacheReadTokens + want.CacheCreationTokens + want.UncachedTokens
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("step %d: accounting mismatch (-want +got):\n%s", i+1, diff)
				}
				usage := `"usage":{"input_tokens":` + itoa(got.UncachedTokens) +
					`,"cache_creation_input_tokens":` + itoa(got.CacheCreationTokens) +
					`,"cache_read_input_tokens":` + itoa(got.CacheReadTokens) +
					`,"cache_creation":{"ephemeral_5m_input_tokens":` + itoa(got.CacheCreation5m) +
					`,"ephemeral_1h_input_tokens":` + itoa(got.CacheCreation1h) + `}`
				if !strings.Contains(string(body), usage) {
					t.Errorf("step %d: response lacks %s:\n%s", i+1, usage, body)
				}
			}
		})
	}
}

// manyBlocks is one message with n blocks of tokens tokens each: a tool-heavy turn.
func manyBlocks(n, tokens int) []blk {
	out := make([]blk, n)
	for i := range out {
		out[i] = blk{byte('A' + i), tokens, ""}
	}
	return out
}

func TestToolsComeFirstInThePrefix(t *testing.T) {
	s := start(t, &Scenario{}, Options{})
	body := req("m", []blk{{'S', 1100, "5m"}}, []blk{{'a', 10, ""}})
	body["tools"] = []any{tool("Read")}
	post(t, s, "/v1/messages", body)
	post(t, s, "/v1/messages", body)
	body["tools"] = []any{tool("Read"), tool("Write")}
	post(t, s, "/v1/messages", body)
	recs := s.Requests()
	if recs[1].Cache.CacheReadTokens == 0 {
		t.Errorf("identical request did not hit: %+v", recs[1].Cache)
	}
	if recs[2].Cache.CacheReadTokens != 0 {
		t.Errorf("a changed tool list still hit the system breakpoint: %+v", recs[2].Cache)
	}
}

func TestBreakpointLimits(t *testing.T) {
	tests := []struct {
		name string
		body map[string]any
		want string
	}{
		{"five breakpoints", req("m", []blk{{'S', 30, "5m"}, {'T', 30, "5m"}}, []blk{{'a', 30, "5m"}, {'b', 30, "5m"}, {'c', 30, "5m"}}),
			`{"type":"error","error":{"type":"invalid_request_error","message":"A maximum of 4 blocks with cache_control may be provided. Found 5."},"request_id":"req_scripted_0001"}`},
		{"1h after 5m", req("m", []blk{{'S', 30, "5m"}}, []blk{{'a', 30, "1h"}}),
			`{"type":"error","error":{"type":"invalid_request_error","message":"messages.0.content.0: a cache_control block with ttl='1h' must not come after one with ttl='5m'"},"request_id":"req_scripted_0001"}`},
		{"bad ttl", req("m", []blk{{'S', 30, "2h"}}, []blk{{'a', 30, ""}}),
			`{"type":"error","error":{"type":"invalid_request_error","message":"cache_control.ttl: Input should be '5m' or '1h'"},"request_id":"req_scripted_0001"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, &Scenario{}, Options{})
			resp, body := post(t, s, "/v1/messages", tt.body)
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("status = %d, want 400", resp.StatusCode)
			}
			if diff := cmp.Diff(tt.want, strings.TrimSpace(string(body))); diff != "" {
				t.Errorf("body mismatch (-want +got):\n%s", diff)
			}
			if r := s.Requests()[0]; r.Status != 400 || r.Rule != "" {
				t.Errorf("recorded %+v", r)
			}
		})
	}
	// Four are fine, including a top-level automatic breakpoint.
	s := start(t, &Scenario{}, Options{})
	body := req("m", []blk{{'S', 30, "5m"}}, []blk{{'a', 30, "5m"}, {'b', 30, "5m"}, {'c', 30, ""}})
	body["cache_control"] = map[string]any{"type": "ephemeral"}
	if resp, out := post(t, s, "/v1/messages", body); resp.StatusCode != 200 {
		t.Errorf("four breakpoints: status %d: %s", resp.StatusCode, out)
	}
	if got := s.Requests()[0].Cache.Breakpoints; got != 4 {
		t.Errorf("breakpoints = %d, want 4", got)
	}
}

func TestFaultedRequestsLeaveTheCacheAlone(t *testing.T) {
	s := start(t, &Scenario{Rules: []Rule{{Times: 1, Fault: &Fault{Status: 529}}}}, Options{})
	body := req("m", []blk{{'S', 1100, "5m"}}, []blk{{'q', 10, ""}})
	post(t, s, "/v1/messages", body)
	post(t, s, "/v1/messages", body)
	recs := s.Requests()
	want := CacheAccount{Model: "m", Breakpoints: 1, InputTokens: 1110, CacheCreationTokens: 1100, CacheCreation5m: 1100, UncachedTokens: 10}
	if diff := cmp.Diff(want, recs[1].Cache); diff != "" {
		t.Errorf("retry after 529 mismatch (-want +got):\n%s", diff)
	}
}

// A tool-using session with keel's breakpoints (last tool, system, latest message) reads from
// the cache everything it shares with earlier turns.
func TestSessionReadsSharedPrefix(t *testing.T) {
	s := start(t, &Scenario{Rules: []Rule{{Reply: []Block{ToolUse("Read", map[string]string{"file_path": "a.go"})}}}}, Options{})
	tools := []any{tool("Read"), tool("Edit")}
	tools[1].(map[string]any)["cache_control"] = map[string]any{"type": "ephemeral"}
	system := []any{map[string]any{"type": "text", "text": strings.Repeat("You are keel. ", 400), "cache_control": map[string]any{"type": "ephemeral"}}}
	history := []any{user([]any{map[string]any{"type": "text", "text": "fix it"}})}
	for turn := 1; turn <= 5; turn++ {
		// Only the latest message carries the message breakpoint.
		msgs := make([]any, len(history))
		copy(msgs, history)
		last := history[len(history)-1].(map[string]any)
		blocks := last["content"].([]any)
		marked := append([]any(nil), blocks[:len(blocks)-1]...)
		lb := map[string]any{}
		for k, v := range blocks[len(blocks)-1].(map[string]any) {
			lb[k] = v
		}
		lb["cache_control"] = map[string]any{"type": "ephemeral"}
		msgs[len(msgs)-1] = map[string]any{"role": "user", "content": append(marked, lb)}
		resp, body := post(t, s, "/v1/messages", map[string]any{
			"model": "m", "max_tokens": 100, "tools": tools, "system": system, "messages": msgs, "stream": true})
		if resp.StatusCode != 200 {
			t.Fatalf("turn %d: %d %s", turn, resp.StatusCode, body)
		}
		id := "toolu_scripted_000" + itoa(turn) + "_0"
		history = append(history,
			assistant([]any{map[string]any{"type": "tool_use", "id": id, "name": "Read", "input": map[string]any{"file_path": "a.go"}}}),
			user([]any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": strings.Repeat("package a\n", 20)}}))
	}
	for _, r := range s.Requests()[1:] {
		c := r.Cache
		if c.SharedPrefixTokens == 0 || float64(c.CacheReadTokens) < 0.99*float64(c.SharedPrefixTokens) {
			t.Errorf("request %d read %d of %d shared tokens", r.N, c.CacheReadTokens, c.SharedPrefixTokens)
		}
	}
}
