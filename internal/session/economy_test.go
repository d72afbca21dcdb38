package session

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/provider/scripted"
)

// TestEconomyFigures measures the prompt economy in one run against the scripted server and
// logs the figures (go test -run TestEconomyFigures -v ./internal/session): the first
// request of "hello", the cache-read share of three fork children after a ~5k-token parent
// prompt, the compaction request's read share of its shared prefix, and the cache
// efficiency of a 20-turn session. The other tests pin each figure; this one puts them side
// by side.
func TestEconomyFigures(t *testing.T) {
	// First request.
	h := newHarness(t, &scripted.Scenario{}, Options{})
	h.send(t, "hello")
	first := h.srv.Requests()[0]
	t.Logf("figure: first request of `hello`: %d tokens, %d bytes, %d tools offered", first.Cache.InputTokens, len(first.Body), len(h.sess.ToolNames()))
	if first.Cache.InputTokens > firstRequestBudget {
		t.Errorf("first request %d tokens", first.Cache.InputTokens)
	}

	// Fork children: a parent of about 5,000 tokens (a project memory file makes up the rest)
	// fans out into three forks.
	cwd := t.TempDir()
	var memory strings.Builder
	for i := 0; memory.Len() < 4500; i++ {
		fmt.Fprintf(&memory, "- Convention %d: keep functions short and errors wrapped with context.\n", i)
	}
	if err := os.WriteFile(filepath.Join(cwd, "KEEL.md"), []byte(memory.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var fan []scripted.Block
	for i := 1; i <= 3; i++ {
		fan = append(fan, scripted.ToolUse("Agent", map[string]any{"description": fmt.Sprintf("part %d", i), "prompt": fmt.Sprintf("check part %d", i)}))
	}
	fh := newHarness(t, &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "child", When: scripted.Match{UserText: "<keel-fork-directive>"}, Reply: []scripted.Block{scripted.Text("part checked")}},
		{Name: "fanout", When: scripted.Match{UserText: "split"}, Times: 1, Reply: fan},
		{Name: "done", When: scripted.Match{ToolResult: "Agent"}, Reply: []scripted.Block{scripted.Text("all parts checked")}},
	}}, Options{Cwd: cwd, ForkSubagents: true})
	fh.send(t, "split the check into three parts")
	var parent scripted.Recorded
	var children []scripted.Recorded
	for _, r := range fh.srv.Requests() {
		switch r.Rule {
		case "fanout":
			parent = r
		case "child":
			children = append(children, r)
		}
	}
	if len(children) != 3 {
		t.Fatalf("%d fork children", len(children))
	}
	minLater := 1.0
	for i, c := range children {
		share := float64(c.Cache.CacheReadTokens) / float64(c.Cache.InputTokens)
		t.Logf("figure: fork child %d: %d input tokens, read share %.4f", i+1, c.Cache.InputTokens, share)
		if i > 0 {
			minLater = min(minLater, share)
		}
	}
	t.Logf("figure: fork children 2..3 after a %d-token parent request: read share >= %.4f", parent.Cache.InputTokens, minLater)
	if minLater < 0.99 {
		t.Errorf("fork children read %.4f", minLater)
	}

	// Compaction after a long session.
	ccwd := t.TempDir()
	var big strings.Builder
	for i := range 200 {
		fmt.Fprintf(&big, "line %d: the quick brown fox jumps over the lazy dog\n", i)
	}
	if err := os.WriteFile(filepath.Join(ccwd, "big.txt"), []byte(big.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	rules := []scripted.Rule{{Name: "summary", When: scripted.Match{UserText: "Summarise this conversation"},
		Reply: []scripted.Block{scripted.Text("SUMMARY: big.txt was read.")}}}
	for turn := 1; turn <= 12; turn++ {
		rules = append(rules, scripted.Rule{When: scripted.Match{Request: turn}, Reply: []scripted.Block{
			scripted.ToolUse("Read", map[string]string{"file_path": "big.txt"})}})
	}
	rules = append(rules, scripted.Rule{Reply: []scripted.Block{scripted.Text("done")}})
	ch := newHarness(t, &scripted.Scenario{Rules: rules}, Options{Cwd: ccwd})
	ch.send(t, "read big.txt over and over")
	ch.send(t, "/compact")
	for _, r := range ch.srv.Requests() {
		if r.Rule == "summary" {
			share := float64(r.Cache.CacheReadTokens) / float64(r.Cache.SharedPrefixTokens)
			t.Logf("figure: compaction request: %d input tokens, %d shared with earlier requests, read %d (share %.4f), written %d",
				r.Cache.InputTokens, r.Cache.SharedPrefixTokens, r.Cache.CacheReadTokens, share, r.Cache.CacheCreationTokens)
			if share < 0.99 {
				t.Errorf("compaction read %.4f", share)
			}
		}
	}

	// Cache efficiency of 20 turns.
	tcwd := t.TempDir()
	if err := os.WriteFile(filepath.Join(tcwd, "f0.txt"), []byte("file 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var turns []scripted.Rule
	for turn := 1; turn <= 19; turn++ {
		turns = append(turns, scripted.Rule{When: scripted.Match{Request: turn}, Reply: []scripted.Block{
			scripted.Text(fmt.Sprintf("step %d", turn)), scripted.ToolUse("Read", map[string]string{"file_path": "f0.txt"})}})
	}
	turns = append(turns, scripted.Rule{Reply: []scripted.Block{scripted.Text("finished")}})
	th := newHarness(t, &scripted.Scenario{Rules: turns}, Options{Cwd: tcwd})
	th.send(t, "walk through the files")
	var shared, read int
	for _, r := range th.srv.Requests()[1:] {
		shared += r.Cache.SharedPrefixTokens
		read += r.Cache.CacheReadTokens
	}
	t.Logf("figure: 20-turn session: requests 2-20 read %d of %d shareable tokens: cache efficiency %.4f", read, shared, float64(read)/float64(shared))
	if read != shared {
		t.Errorf("cache efficiency %d/%d", read, shared)
	}
}
