package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/builtin"
	"github.com/keel-dev/keel/internal/cachewatch"
	"github.com/keel-dev/keel/internal/clearing"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/provider/anthropic"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/tool"
)

// A long run of Reads against the scripted model: the agent clears the oldest results once
// that repays its cache write, declares it (no cache break is reported), keeps reading the
// unchanged prefix from the cache, and when the model reads a cleared file again it gets the
// content, not the unchanged-file stub.
func TestClearingStaleToolResults(t *testing.T) {
	const files = 24
	dir := t.TempDir()
	path := func(i int) string { return filepath.Join(dir, fmt.Sprintf("f%02d.go", i)) }
	for i := 1; i <= files; i++ {
		body := fmt.Sprintf("// MARK-%02d\n", i) + strings.Repeat(fmt.Sprintf("var v%02d = %d // filler line of the file\n", i, i), 80)
		if err := os.WriteFile(path(i), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(i int) []scripted.Block {
		return []scripted.Block{scripted.ToolUse("Read", map[string]string{"file_path": path(i)})}
	}
	rules := []scripted.Rule{{When: scripted.Match{UserText: "start"}, Times: 1, Reply: read(1)}}
	for i := 1; i < files; i++ {
		rules = append(rules, scripted.Rule{When: scripted.Match{ToolResult: "Read", Contains: fmt.Sprintf("MARK-%02d", i)}, Times: 1, Reply: read(i + 1)})
	}
	// After the last file the model reads the first again, which was cleared by then.
	rules = append(rules,
		scripted.Rule{When: scripted.Match{ToolResult: "Read", Contains: fmt.Sprintf("MARK-%02d", files)}, Times: 1, Reply: read(1)},
		scripted.Rule{When: scripted.Match{ToolResult: "Read", Contains: "MARK-01"}, Times: 1, Reply: []scripted.Block{scripted.Text("read it again")}})
	srv, agent, w := readingAgent(t, dir, rules)
	agent.Clear = clearing.New(clearing.Policy{Trigger: 4_000, Keep: 2}, nil)
	out, err := agent.Run(t.Context(), []message.Message{message.User(message.Text("start"))})
	if err != nil {
		t.Fatal(err)
	}
	if out.Text != "read it again" {
		t.Fatalf("the run ended with %q: the second Read of a cleared file did not show its content", out.Text)
	}

	reqs := srv.Requests()
	stub := clearing.Stub("Read", []byte(fmt.Sprintf(`{"file_path":%q}`, path(1))), true)
	first := -1
	for i, r := range reqs {
		if strings.Contains(string(r.Body), jsonText(stub)) {
			first = i
			break
		}
	}
	if first < 0 {
		t.Fatal("no request carried the stub of the first Read")
	}
	cleared := string(reqs[first].Body)
	// The two newest results stay whole; every older one is a stub.
	var kept int
	for i := 1; i <= files; i++ {
		if strings.Contains(cleared, fmt.Sprintf("MARK-%02d", i)) {
			kept++
		}
	}
	if kept != 2 {
		t.Errorf("the request after clearing carries %d whole results, want the 2 newest", kept)
	}

	tot := w.Totals()
	if tot.Breaks != 0 || tot.Declared == 0 {
		t.Errorf("cache watcher: %d breaks %v, %d declared; want none, at least one", tot.Breaks, tot.ByKind, tot.Declared)
	}
	var hit, shared int
	for _, r := range reqs {
		hit += r.Cache.CacheReadTokens
		shared += r.Cache.SharedPrefixTokens
	}
	if float64(hit) < 0.99*float64(shared) {
		t.Errorf("cache read %d of %d shared prefix tokens (%.3f), want ≥ 0.99", hit, shared, float64(hit)/float64(shared))
	}
}

// jsonText is s as it appears inside a JSON string.
func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// With the provider's own clearing the agent sends the whole history with the edit on every
// request and clears nothing itself; it marks the newest result the provider clears, so each
// request reads the edited prefix the one before wrote, and the short reads of the provider's
// clearings are declared, not cache breaks.
func TestProviderClearing(t *testing.T) {
	const files = 16
	dir := t.TempDir()
	path := func(i int) string { return filepath.Join(dir, fmt.Sprintf("f%02d.go", i)) }
	for i := 1; i <= files; i++ {
		body := fmt.Sprintf("// MARK-%02d\n", i) + strings.Repeat(fmt.Sprintf("var v%02d = %d // filler line of the file\n", i, i), 80)
		if err := os.WriteFile(path(i), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(i int) []scripted.Block {
		return []scripted.Block{scripted.ToolUse("Read", map[string]string{"file_path": path(i)})}
	}
	rules := []scripted.Rule{{When: scripted.Match{UserText: "start"}, Times: 1, Reply: read(1)}}
	for i := 1; i < files; i++ {
		rules = append(rules, scripted.Rule{When: scripted.Match{ToolResult: "Read", Contains: fmt.Sprintf("MARK-%02d", i)}, Times: 1, Reply: read(i + 1)})
	}
	rules = append(rules, scripted.Rule{When: scripted.Match{ToolResult: "Read", Contains: fmt.Sprintf("MARK-%02d", files)}, Times: 1,
		Reply: []scripted.Block{scripted.Text("all read")}})
	srv, agent, w := readingAgent(t, dir, rules)
	agent.ClearByProvider = &provider.ToolResultClearing{Trigger: 4_000, Keep: 2, ClearAtLeast: 500}
	out, err := agent.Run(t.Context(), []message.Message{message.User(message.Text("start"))})
	if err != nil {
		t.Fatal(err)
	}
	if out.Text != "all read" {
		t.Fatalf("the run ended with %q", out.Text)
	}
	// A request repeating the last one's prefix (a compaction) asks for the same clearing.
	if cs := agent.LastCacheSafe(); cs == nil || cs.ClearToolResults != agent.ClearByProvider {
		t.Errorf("the cache-safe parameters do not carry the provider's clearing")
	}
	reqs := srv.Requests()
	last := reqs[len(reqs)-1]
	// The history sent stays whole: every result, no stub of keel's.
	for i := 1; i <= files; i++ {
		if !strings.Contains(string(last.Body), fmt.Sprintf("MARK-%02d", i)) {
			t.Errorf("the last request lacks the result of read %d", i)
		}
	}
	if strings.Contains(string(last.Body), jsonText(clearing.StubPrefix)) {
		t.Error("the agent cleared results itself")
	}
	if len(last.AppliedEdits) != 1 || last.AppliedEdits[0].ClearedToolUses != files-2 {
		t.Errorf("the provider cleared %+v in the last request, want %d tool uses", last.AppliedEdits, files-2)
	}
	tot := w.Totals()
	if tot.Breaks != 0 || tot.Declared == 0 {
		t.Errorf("cache watcher: %d breaks %v, %d declared; want none, at least one", tot.Breaks, tot.ByKind, tot.Declared)
	}
	var hit, shared int
	for _, r := range reqs {
		hit += r.Cache.CacheReadTokens
		shared += r.Cache.SharedPrefixTokens
	}
	if float64(hit) < 0.99*float64(shared) {
		t.Errorf("cache read %d of %d shared prefix tokens (%.3f), want ≥ 0.99", hit, shared, float64(hit)/float64(shared))
	}
}

// The mark is the last block before the result of the oldest tool use the provider keeps,
// counted across parallel calls, a thinking block skipped.
func TestProviderMark(t *testing.T) {
	res := func(id string) message.Block {
		return message.ToolResult(id, []message.Block{message.Text("x")}, false)
	}
	use := func(id string) message.Block { return message.ToolUse(id, "Read", json.RawMessage(`{}`)) }
	msgs := []message.Message{
		message.User(message.Text("go")),
		message.Assistant(use("a"), use("b")),
		message.User(res("a"), res("b")),
		message.Assistant(use("c"), message.Block{Type: message.TypeThinking, Thinking: "t", Signature: "s"}),
		message.User(res("c"), message.Text("note")),
	}
	for keep, want := range map[int]*provider.BlockRef{0: nil, 1: {Message: 3, Block: 0}, 2: {Message: 2, Block: 0},
		3: {Message: 1, Block: 1}, 4: nil} {
		got := providerMark(msgs, keep)
		if (got == nil) != (want == nil) || got != nil && *got != *want {
			t.Errorf("keep %d: mark %v, want %v", keep, got, want)
		}
	}
}

// readingAgent is an agent with the Read tool in dir, talking to a scripted model with rules,
// its cache watched: what both clearings' tests run.
func readingAgent(t *testing.T, dir string, rules []scripted.Rule) (*scripted.Server, *Agent, *cachewatch.Watcher) {
	t.Helper()
	srv, err := scripted.Start(t.Context(), "", &scripted.Scenario{Rules: rules, Fallback: &scripted.Rule{Reply: []scripted.Block{scripted.Text("no rule")}}}, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	p, err := anthropic.New(anthropic.Options{APIKey: "k", BaseURL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	w := cachewatch.New(cachewatch.Options{})
	policy, _ := provider.NewTTLPolicy(nil)
	pool := tool.Assemble([]tool.Tool{builtin.Read()}, nil)
	return srv, &Agent{
		Provider: p, Model: "claude-test", Files: tool.NewFileState(), State: tool.State{Cwd: dir},
		Pool: func(context.Context) *tool.Pool { return pool },
		System: func(context.Context) System {
			return System{Blocks: []provider.SystemBlock{{Text: strings.Repeat("You read files. ", 400)}}, Names: []string{"static"}}
		},
		Prepare: func(r *provider.Request) { provider.PlaceBreakpoints(r, policy) },
		Watch:   cachewatch.Events{Watcher: w},
	}, w
}
