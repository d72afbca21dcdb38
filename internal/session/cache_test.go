package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/goldentest"

	"github.com/keel-dev/keel/internal/provider/scripted"
)

// firstRequestBudget is the most the first request of `keel -p hello` may weigh, in the
// scripted server's tokens, with every built-in tool reachable and no memory files but the
// (empty) auto memory, whose instructions every session carries as Claude Code's do: a third
// of Claude Code's 12,118. Every token is paid on every request of every agent: raise it on
// purpose, never by accident (a new rarely needed tool declares tool.Deferrable). Raised from
// 4000 to 4200 for the auto memory section, to 4250 for the Agent tool's items (fan-outs);
// lowered to 4050 when TodoWrite was deferred (4,015); raised to 4125 for the sandbox's lines
// in Bash's description and schema (the sandbox is on by default); lowered to 3550 when the
// prompt, the tools' descriptions and the built-in listings were tightened (3,489): each token of
// the first request is read again by every later request of the session.
const firstRequestBudget = 3550

// TestFirstRequestBudget pins the first request's size and, in testdata/first_request.golden,
// its shape: which tools are sent whole and which deferred, the system blocks, and the
// listing messages after the prompt. The working directory and the platform are masked.
func TestFirstRequestBudget(t *testing.T) {
	cwd, home := t.TempDir(), t.TempDir()
	h := newHarness(t, &scripted.Scenario{}, Options{Cwd: cwd, Home: home, Now: func() time.Time { return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) }})
	h.send(t, "hello")
	first := h.srv.Requests()[0]
	t.Logf("first request: %d tokens, %d bytes, %d tools (%d of them deferred)", first.Cache.InputTokens, len(first.Body),
		len(h.sess.ToolNames()), len(h.sess.deferredTools(t.Context())))
	if first.Cache.InputTokens > firstRequestBudget {
		t.Errorf("the first request is %d tokens, over the %d-token budget", first.Cache.InputTokens, firstRequestBudget)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, first.Body, "", "  "); err != nil {
		t.Fatal(err)
	}
	masked := strings.ReplaceAll(pretty.String(), h.sess.insp.AutoMemoryDir(), "$AUTO_MEMORY")
	masked = strings.ReplaceAll(masked, cwd, "$CWD")
	masked = platform.ReplaceAllString(masked, "Platform: $$PLATFORM")
	goldentest.Check(t, "first_request.golden", []byte(masked))
}

var platform = regexp.MustCompile(`Platform: [a-z0-9]+/[a-z0-9]+`)

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
	if cs := h.sess.cacheSafeNow(); cs == nil || len(cs.Messages) != 40 {
		t.Errorf("cache-safe parameters after 20 turns hold %v messages, want 40", cs)
	}
}
