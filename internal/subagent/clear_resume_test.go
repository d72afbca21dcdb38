package subagent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/clearing"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/transcript"
)

// TestContinuedChildKeepsItsClearedResults: a subagent that cleared old tool results records
// the clearing in its own transcript (through the sink every agent built by NewAgent gets),
// so a continuation in a new process sends the messages of the child's last request again,
// stubs included, byte for byte.
func TestContinuedChildKeepsItsClearedResults(t *testing.T) {
	const reads = 12
	rules := []scripted.Rule{
		{Name: "follow-up", When: scripted.Match{UserText: "FOLLOW-UP"}, Reply: []scripted.Block{scripted.Text("follow-up answer")}},
		{Name: "parent-done", When: scripted.Match{ToolResult: "Agent"}, Reply: []scripted.Block{scripted.Text("Parent done.")}},
		{Name: "spawn", When: scripted.Match{UserText: "start"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Agent",
			map[string]any{"description": "read", "prompt": "CHILD-TASK: read big.txt", "subagent_type": "general-purpose"})}},
	}
	for n := 1; n <= reads; n++ {
		rules = append(rules, scripted.Rule{When: scripted.Match{Request: n + 1}, Reply: []scripted.Block{
			scripted.ToolUse("Read", map[string]any{"file_path": "big.txt", "offset": n})}})
	}
	rules = append(rules, scripted.Rule{Name: "child-done", When: scripted.Match{ToolResult: "Read"}, Reply: []scripted.Block{scripted.Text("Child result: 42.")}})
	srv, err := scripted.Start(t.Context(), "", &scripted.Scenario{Rules: rules}, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	session := filepath.Join(t.TempDir(), "session.jsonl")
	w := newWorldOn(t, srv, worldOptions{session: session, rules: []string{"Read"}})
	var big strings.Builder
	for i := range 200 {
		fmt.Fprintf(&big, "line %d: the quick brown fox jumps over the lazy dog\n", i)
	}
	if err := os.WriteFile(filepath.Join(w.dir, "big.txt"), []byte(big.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := w.run("start")
	id := agentIDRe.FindStringSubmatch(toolResults(out.Messages)[0])[1]
	var childLast scripted.Recorded
	for _, r := range srv.Requests() {
		if r.Rule == "child-done" {
			childLast = r
		}
	}
	stub, _ := json.Marshal(clearing.StubPrefix)
	if !bytes.Contains(childLast.Body, bytes.Trim(stub, `"`)) {
		t.Fatal("the child cleared no tool results")
	}
	path, _ := transcript.AgentPaths(session, id)
	st, err := transcript.Load(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Cleared) == 0 {
		t.Fatal("the child's transcript records no clearing")
	}

	w2 := newWorldOn(t, srv, worldOptions{session: session, dir: w.dir, rules: []string{"Read"}})
	if _, err := w2.runner.Resume(t.Context(), id, "FOLLOW-UP: and then?"); err != nil {
		t.Fatal(err)
	}
	next := srv.Requests()[len(srv.Requests())-1]
	prev, cont := bodyMessages(t, childLast.Body), bodyMessages(t, next.Body)
	if next.Rule != "follow-up" || len(cont) <= len(prev) {
		t.Fatalf("continuation: rule %s, %d messages after %d", next.Rule, len(cont), len(prev))
	}
	// The last message's breakpoint moves on; every message before it is the same bytes.
	for i := range len(prev) - 1 {
		if !bytes.Equal(prev[i], cont[i]) {
			t.Fatalf("message %d differs in the continuation:\nbefore: %.300s\nafter:  %.300s", i, prev[i], cont[i])
		}
	}
	// (This test world sets no cache breakpoints, so only the shared prefix is measured.)
	if next.Cache.SharedPrefixTokens < childLast.Cache.InputTokens {
		t.Errorf("the continuation shares %d tokens with earlier requests, want all %d of the child's last request",
			next.Cache.SharedPrefixTokens, childLast.Cache.InputTokens)
	}
}

func bodyMessages(t *testing.T, body []byte) []json.RawMessage {
	t.Helper()
	var req struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	return req.Messages
}
