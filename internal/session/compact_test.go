package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/provider/scripted"
)

// staticPrefixTokens counts, the way the scripted server does, the tokens of a Messages body's
// tools and first system block: the prefix every request of the session shares.
func staticPrefixTokens(t *testing.T, body []byte) int {
	t.Helper()
	var req struct {
		System []map[string]any `json:"system"`
		Tools  []map[string]any `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	count := func(b map[string]any) int {
		delete(b, "cache_control")
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(b)
		return (len(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))) + 3) / 4
	}
	n := 0
	for _, tl := range req.Tools {
		if tl["defer_loading"] != true {
			n += count(tl)
		}
	}
	return n + count(req.System[0])
}

// longSession is a scenario of reads of a large file, turn after turn (from another line
// each time: a second Read of the same lines would be a short stub), then a summary when
// asked for one.
func longSession(t *testing.T, turns int) (*scripted.Scenario, string) {
	t.Helper()
	cwd := t.TempDir()
	var big strings.Builder
	for i := range 200 {
		fmt.Fprintf(&big, "line %d: the quick brown fox jumps over the lazy dog\n", i)
	}
	if err := os.WriteFile(filepath.Join(cwd, "big.txt"), []byte(big.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	rules := []scripted.Rule{{Name: "summary", When: scripted.Match{UserText: "Summarise this conversation"},
		Reply: []scripted.Block{scripted.Text("SUMMARY: big.txt was read many times.")}}}
	for turn := 1; turn <= turns; turn++ {
		rules = append(rules, scripted.Rule{When: scripted.Match{Request: turn}, Reply: []scripted.Block{
			scripted.Text(fmt.Sprintf("reading, pass %d", turn)), scripted.ToolUse("Read", map[string]any{"file_path": "big.txt", "offset": turn})}})
	}
	rules = append(rules, scripted.Rule{Reply: []scripted.Block{scripted.Text("done")}})
	return &scripted.Scenario{Rules: rules}, cwd
}

func compactionRequest(t *testing.T, h *harness) scripted.Recorded {
	t.Helper()
	for _, r := range h.srv.Requests() {
		if r.Rule == "summary" {
			return r
		}
	}
	t.Fatal("no compaction request")
	return scripted.Recorded{}
}

// TestCompactionReadsTheCache: /compact after a long session sends the conversation's last
// request byte for byte plus the summary prompt, reads at least 99% of that shared prefix
// from the cache and writes nothing; the first request after it still reads the static
// prefix (tools and static system prompt).
func TestCompactionReadsTheCache(t *testing.T) {
	sc, cwd := longSession(t, 12)
	h := newHarness(t, sc, Options{Cwd: cwd})
	if res := result(t, h.send(t, "read big.txt over and over")); res.NumTurns != 13 {
		t.Fatalf("%d turns, want 13", res.NumTurns)
	}
	before := h.srv.Requests()
	last := before[len(before)-1]
	h.send(t, "/compact")
	c := compactionRequest(t, h)
	checkCompaction(t, c, last)
	after := h.send(t, "and now?")
	if res := result(t, after); res.Text != "done" {
		t.Fatalf("after compaction: %q", res.Text)
	}
	reqs := h.srv.Requests()
	next := reqs[len(reqs)-1]
	static := staticPrefixTokens(t, next.Body)
	t.Logf("first request after compaction: input %d, cache read %d (static prefix %d)", next.Cache.InputTokens, next.Cache.CacheReadTokens, static)
	if next.Cache.CacheReadTokens < static {
		t.Errorf("the first request after compaction read %d tokens from the cache, want the static prefix (%d)", next.Cache.CacheReadTokens, static)
	}
}

// TestAutoCompactionReadsTheCache: compaction the loop starts on its own, mid-run, when the
// history outgrows the window's threshold, reads the cache the same way.
func TestAutoCompactionReadsTheCache(t *testing.T) {
	sc, cwd := longSession(t, 12)
	h := newHarness(t, sc, Options{Cwd: cwd, ContextWindow: 30_000, SettingsArgs: noClearing})
	result(t, h.send(t, "read big.txt over and over"))
	c := compactionRequest(t, h)
	var prev scripted.Recorded
	for _, r := range h.srv.Requests() {
		if r.N < c.N {
			prev = r
		}
	}
	checkCompaction(t, c, prev)
}

func checkCompaction(t *testing.T, c, prev scripted.Recorded) {
	t.Helper()
	share := float64(c.Cache.CacheReadTokens) / float64(c.Cache.SharedPrefixTokens)
	t.Logf("compaction request: input %d tokens, shared prefix %d, cache read %d (%.2f%% of the shared prefix), written %d, breakpoints %d",
		c.Cache.InputTokens, c.Cache.SharedPrefixTokens, c.Cache.CacheReadTokens, 100*share, c.Cache.CacheCreationTokens, c.Cache.Breakpoints)
	if c.Cache.SharedPrefixTokens < prev.Cache.InputTokens {
		t.Errorf("the compaction request shares %d tokens with earlier requests, want all %d of the conversation's last request",
			c.Cache.SharedPrefixTokens, prev.Cache.InputTokens)
	}
	if share < 0.99 {
		t.Errorf("compaction read %.4f of its shared prefix from the cache, want >= 0.99", share)
	}
	if c.Cache.CacheCreationTokens != 0 {
		t.Errorf("compaction wrote %d tokens to the cache, want none", c.Cache.CacheCreationTokens)
	}
	if c.Cache.Breakpoints > 4 {
		t.Errorf("%d breakpoints", c.Cache.Breakpoints)
	}
}

// TestCompactionThresholdFollowsTheModel: the history is compacted at 85% of the session's
// model's own context window — 1M tokens for the Claude 5 family, 200K for Haiku 4.5 and for
// a model keel knows nothing of — unless the window is given.
func TestCompactionThresholdFollowsTheModel(t *testing.T) {
	h := newHarness(t, &scripted.Scenario{}, Options{})
	for model, want := range map[string]int64{"claude-opus-5-5": 850_000, "claude-haiku-4-5": 170_000, "local-llama": 170_000} {
		h.sess.switches.SetModel(model)
		if got := h.sess.compaction.Threshold(); got != want {
			t.Errorf("%s: compaction at %d tokens, want %d", model, got, want)
		}
	}
	h.sess.opts.ContextWindow = 30_000
	if got := h.sess.compaction.Threshold(); got != 25_500 {
		t.Errorf("with a given window: %d", got)
	}
}

// TestReadAfterCompactionShowsTheFile: a second Read of unchanged lines is a short stub while
// the first result is in the context; after /compact it is not, so the content comes again.
func TestReadAfterCompactionShowsTheFile(t *testing.T) {
	cwd := t.TempDir()
	if err := os.WriteFile(filepath.Join(cwd, "big.txt"), []byte(strings.Repeat("the quick brown fox jumps over the lazy dog\n", 20)), 0o644); err != nil {
		t.Fatal(err)
	}
	read := scripted.ToolUse("Read", map[string]any{"file_path": "big.txt"})
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "summary", When: scripted.Match{UserText: "Summarise this conversation"}, Reply: []scripted.Block{scripted.Text("SUMMARY: big.txt was read.")}},
		{Name: "read", When: scripted.Match{UserText: "read it"}, Times: 3, Reply: []scripted.Block{read}},
		{Reply: []scripted.Block{scripted.Text("done")}},
	}}
	h := newHarness(t, sc, Options{Cwd: cwd})
	lastToolResult := func() string {
		reqs := h.srv.Requests()
		body := string(reqs[len(reqs)-1].Body)
		i := strings.LastIndex(body, `"type":"tool_result"`)
		if i < 0 {
			t.Fatal("no tool result in the last request")
		}
		return body[i:]
	}
	h.send(t, "read it")
	if got := lastToolResult(); !strings.Contains(got, `1\tthe quick brown fox`) {
		t.Fatalf("first read: %.200s", got)
	}
	h.send(t, "read it again")
	if got := lastToolResult(); !strings.Contains(got, "Unchanged since your last Read") {
		t.Errorf("second read, the first in context: %.200s", got)
	}
	h.send(t, "/compact")
	h.send(t, "now read it")
	if got := lastToolResult(); !strings.Contains(got, `1\tthe quick brown fox`) {
		t.Errorf("read after compaction: %.200s", got)
	}
}
