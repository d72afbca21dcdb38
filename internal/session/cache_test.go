package session

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/provider/scripted"
)

// firstRequestBudget is the most the first request of a session with every built-in tool and
// no memory files may weigh. Every byte is paid on every request of every agent: raise it on
// purpose, never by accident.
const firstRequestBudget = 40 << 10

func TestFirstRequestStaysLean(t *testing.T) {
	h := newHarness(t, &scripted.Scenario{}, Options{})
	h.send(t, "hi")
	body := h.srv.Requests()[0].Body
	t.Logf("first request: %d bytes (%d tools, budget %d)", len(body), len(h.sess.ToolNames()), firstRequestBudget)
	if len(body) > firstRequestBudget {
		t.Errorf("first request is %d bytes, over the %d-byte budget", len(body), firstRequestBudget)
	}
}

// wireRequest is the part of a Messages API body the prefix check compares.
type wireRequest struct {
	System   []map[string]any `json:"system"`
	Tools    []map[string]any `json:"tools"`
	Messages []struct {
		Role    string           `json:"role"`
		Content []map[string]any `json:"content"`
	} `json:"messages"`
}

// withoutMarkers drops cache_control, which legitimately moves to the newest message.
func withoutMarkers(blocks []map[string]any) []map[string]any {
	out := make([]map[string]any, len(blocks))
	for i, b := range blocks {
		c := map[string]any{}
		for k, v := range b {
			if k != "cache_control" {
				c[k] = v
			}
		}
		out[i] = c
	}
	return out
}

// TestTwentyTurnsKeepTheirPrefix runs 20 turns, some with parallel tool calls, and checks
// every request repeats the previous one exactly before its new tail and reads from the cache
// at least 99% of what it shares with earlier requests.
func TestTwentyTurnsKeepTheirPrefix(t *testing.T) {
	cwd := t.TempDir()
	for i := range 3 {
		os.WriteFile(filepath.Join(cwd, fmt.Sprintf("f%d.txt", i)), []byte(fmt.Sprintf("file %d\n", i)), 0o644)
	}
	read := func(name string) scripted.Block {
		return scripted.ToolUse("Read", map[string]string{"file_path": name})
	}
	var rules []scripted.Rule
	for turn := 1; turn <= 19; turn++ {
		blocks := []scripted.Block{scripted.Text(fmt.Sprintf("step %d", turn)), read("f0.txt")}
		if turn%3 == 0 { // parallel reads in every third turn
			blocks = append(blocks, read("f1.txt"), read("f2.txt"))
		}
		rules = append(rules, scripted.Rule{When: scripted.Match{Request: turn}, Reply: blocks})
	}
	rules = append(rules, scripted.Rule{Reply: []scripted.Block{scripted.Text("finished")}})
	h := newHarness(t, &scripted.Scenario{Rules: rules}, Options{Cwd: cwd})
	res := result(t, h.send(t, "walk through the files"))
	if res.NumTurns != 20 {
		t.Fatalf("turns = %d, want 20", res.NumTurns)
	}
	reqs := h.srv.Requests()
	var prev wireRequest
	var sharedTotal, readTotal int
	for i, r := range reqs {
		var cur wireRequest
		if err := json.Unmarshal(r.Body, &cur); err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
		if i > 0 {
			if diff := cmp.Diff(withoutMarkers(prev.System), withoutMarkers(cur.System)); diff != "" {
				t.Errorf("request %d: system changed (-prev +cur):\n%s", i+1, diff)
			}
			if diff := cmp.Diff(withoutMarkers(prev.Tools), withoutMarkers(cur.Tools)); diff != "" {
				t.Errorf("request %d: tools changed (-prev +cur):\n%s", i+1, diff)
			}
			if len(cur.Messages) < len(prev.Messages) {
				t.Fatalf("request %d has fewer messages than the one before", i+1)
			}
			for j, m := range prev.Messages {
				if diff := cmp.Diff(withoutMarkers(m.Content), withoutMarkers(cur.Messages[j].Content)); diff != "" || m.Role != cur.Messages[j].Role {
					t.Errorf("request %d: messages[%d] changed (-prev +cur):\n%s", i+1, j, diff)
				}
			}
			shared, got := r.Cache.SharedPrefixTokens, r.Cache.CacheReadTokens
			sharedTotal += shared
			readTotal += got
			if shared == 0 || float64(got) < 0.99*float64(shared) {
				t.Errorf("request %d read %d of %d shared tokens from the cache", i+1, got, shared)
			}
		}
		prev = cur
	}
	t.Logf("20 turns: first request %d bytes; turns 2-20 read %d of %d shared prefix tokens from the cache (%.2f%%); cache breaks %d",
		len(reqs[0].Body), readTotal, sharedTotal, 100*float64(readTotal)/float64(sharedTotal), res.Cache.Breaks)
	if res.Cache.Breaks != 0 {
		t.Errorf("cache breaks = %d, want 0", res.Cache.Breaks)
	}
	if cs := h.sess.CacheSafe(); cs == nil || len(cs.Messages) != 40 {
		t.Errorf("cache-safe parameters after 20 turns hold %v messages, want 40", cs)
	}
}
