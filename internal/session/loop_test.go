package session

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/tool"
)

// toolResultText finds the text of the tool_result answering the first tool_use in history.
func toolResultText(t *testing.T, hist []message.Message) (string, bool) {
	t.Helper()
	for _, m := range hist {
		for _, b := range m.Content {
			if b.Type == message.TypeToolResult {
				return message.Message{Content: b.Content}.TextOf(), b.IsError
			}
		}
	}
	t.Fatal("no tool_result in history")
	return "", false
}

func TestBadToolCallsGoBackToTheModel(t *testing.T) {
	tests := []struct {
		name  string
		block scripted.Block
		want  string
	}{
		{"unknown tool", scripted.ToolUse("Frobnicate", map[string]string{}), "No such tool: Frobnicate. Available tools: Bash, Glob"},
		{"schema violation", scripted.ToolUse("Read", map[string]int{"file_path": 7}), "InputValidationError"},
		{"input not JSON", scripted.Block{Kind: scripted.KindToolUse, Name: "Read", RawInput: `{"file_path": "a.txt"`}, "was not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := &scripted.Scenario{Rules: []scripted.Rule{
				{When: scripted.Match{UserText: "go"}, Times: 1, Reply: []scripted.Block{tt.block}},
				{Reply: []scripted.Block{scripted.Text("recovered")}},
			}}
			h := newHarness(t, sc, Options{})
			res := result(t, h.send(t, "go"))
			if res.IsError || res.Text != "recovered" {
				t.Fatalf("result = %q (error %v), want the loop to go on to \"recovered\"", res.Text, res.IsError)
			}
			text, isErr := toolResultText(t, h.sess.History())
			if !isErr || !strings.Contains(text, tt.want) {
				t.Errorf("tool result = %q (error %v), want an error containing %q", text, isErr, tt.want)
			}
			// Every request body stayed valid JSON (the history never carried the bad input).
			for _, r := range h.srv.Requests() {
				if !json.Valid(r.Body) {
					t.Errorf("request %d body is not JSON", r.N)
				}
			}
		})
	}
}

func TestMaxTokensReplyIsContinued(t *testing.T) {
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "essay"}, Times: 1, Reply: []scripted.Block{scripted.Text("The first half")}, StopReason: "max_tokens"},
		{When: scripted.Match{UserText: "Continue exactly"}, Reply: []scripted.Block{scripted.Text(" and the second half.")}},
	}}
	h := newHarness(t, sc, Options{})
	res := result(t, h.send(t, "write an essay"))
	if res.Text != " and the second half." || res.NumTurns != 2 {
		t.Errorf("result = %q after %d turns, want the continuation after 2", res.Text, res.NumTurns)
	}
}

func TestInterruptMidStreamKeepsHistoryValid(t *testing.T) {
	// The answer stops after its first text delta (message_start, content_block_start, ping,
	// delta) until the interrupt ends the request: it can never complete first.
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "slow"}, Times: 1, Reply: []scripted.Block{scripted.Text(strings.Repeat("word ", 200))},
			Fault: &scripted.Fault{Hold: make(chan struct{}), HoldAfter: 4}},
		{Reply: []scripted.Block{scripted.Text("fast")}},
	}}
	h := newHarness(t, sc, Options{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var sawText bool
	for e, err := range h.sess.Send(ctx, "slow please") {
		if err != nil {
			break
		}
		if _, ok := e.(event.TextDelta); ok && !sawText {
			sawText = true
			cancel()
		}
	}
	if !sawText {
		t.Fatal("no text streamed before the interrupt")
	}
	hist := conversation(h.sess.History())
	if len(hist) != 1 || hist[0].Role != message.RoleUser {
		t.Fatalf("history after interrupt = %+v, want just the prompt (no half message)", hist)
	}
	res := result(t, h.send(t, "again"))
	if res.Text != "fast" {
		t.Errorf("next send after interrupt = %q, want fast", res.Text)
	}
}

func TestInterruptDuringToolClosesEveryToolUse(t *testing.T) {
	started := make(chan struct{})
	blocker := tool.New(tool.Spec[struct{}]{
		Name: "Block", Description: "Blocks until cancelled.", Schema: json.RawMessage(`{"type":"object"}`),
		IsReadOnly: func(struct{}) bool { return true },
		Run: func(ctx context.Context, env *tool.Env, _ struct{}) tool.Result {
			close(started)
			<-ctx.Done()
			return tool.Errorf("cancelled")
		},
	})
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "go"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Block", map[string]string{}), scripted.ToolUse("Read", map[string]string{"file_path": "x"})}},
		{Reply: []scripted.Block{scripted.Text("fine")}},
	}}
	h := newHarness(t, sc, Options{Tools: []tool.Tool{blocker}})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() { <-started; cancel() }()
	for range h.sess.Send(ctx, "go") {
	}
	hist := h.sess.History()
	last := hist[len(hist)-1]
	results := 0
	for _, b := range last.Content {
		if b.Type == message.TypeToolResult {
			results++
		}
	}
	if results != 2 {
		t.Fatalf("last message has %d tool results, want 2 (one per tool_use); history %+v", results, hist)
	}
	if res := result(t, h.send(t, "next")); res.Text != "fine" {
		t.Errorf("send after interrupt = %q", res.Text)
	}
}

// writeHook writes an executable hook script and returns its path.
func writeHook(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPreToolUseExit2BlocksEditAndTellsTheModel(t *testing.T) {
	cwd := t.TempDir()
	os.WriteFile(filepath.Join(cwd, "a.txt"), []byte("one\n"), 0o644)
	hook := writeHook(t, t.TempDir(), "guard.sh", "cat >/dev/null\necho 'edits to a.txt are frozen' >&2\nexit 2\n")
	settings := `{"hooks":{"PreToolUse":[{"matcher":"Edit|Write","hooks":[{"type":"command","command":"` + hook + `"}]}]}}`
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "edit"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Read", map[string]string{"file_path": "a.txt"})}},
		{When: scripted.Match{ToolResult: "Read"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Edit", map[string]string{"file_path": "a.txt", "old_string": "one", "new_string": "two"})}},
		{Reply: []scripted.Block{scripted.Text("understood")}},
	}}
	h := newHarness(t, sc, Options{Cwd: cwd, PermissionMode: "acceptEdits", SettingsArgs: []string{settings}})
	res := result(t, h.send(t, "edit a.txt"))
	if got, _ := os.ReadFile(filepath.Join(cwd, "a.txt")); string(got) != "one\n" {
		t.Errorf("a.txt = %q, the blocked edit ran", got)
	}
	reqs := h.srv.Requests()
	if !strings.Contains(string(reqs[len(reqs)-1].Body), "edits to a.txt are frozen") {
		t.Error("the hook's stderr did not reach the next model request")
	}
	if len(res.Denials) != 1 || res.Denials[0].ToolName != "Edit" {
		t.Errorf("denials = %+v, want the Edit", res.Denials)
	}
}

func TestStopHookExit2ContinuesOnce(t *testing.T) {
	dir := t.TempDir()
	// Blocks the first stop only: a second stop has stop_hook_active set.
	hook := writeHook(t, dir, "stop.sh", `if grep -q '"stop_hook_active":true'; then exit 0; fi
echo 'run the tests before stopping' >&2
exit 2
`)
	settings := `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"` + hook + `"}]}]}}`
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "run the tests"}, Reply: []scripted.Block{scripted.Text("tests pass")}},
		{Reply: []scripted.Block{scripted.Text("done")}},
	}}
	h := newHarness(t, sc, Options{SettingsArgs: []string{settings}})
	res := result(t, h.send(t, "do it"))
	if res.Text != "tests pass" || res.NumTurns != 2 {
		t.Errorf("result = %q after %d turns, want \"tests pass\" after 2", res.Text, res.NumTurns)
	}
}

func TestCompactionRecordsABoundaryAndReportsNoBreak(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "Summarise this conversation"}, Reply: []scripted.Block{scripted.Text("SUMMARY: the user said hello twice.")}},
		{Reply: []scripted.Block{scripted.Text("hi")}},
	}}
	h := newHarness(t, sc, Options{Home: home, Cwd: cwd})
	h.send(t, "hello")
	h.send(t, "hello again")
	events := h.send(t, "/compact")
	var compacted bool
	for _, e := range events {
		switch e.(type) {
		case event.Compacted:
			compacted = true
		case event.CacheBreak:
			t.Errorf("compaction reported a cache break: %+v", e)
		}
	}
	if !compacted {
		t.Fatal("no Compacted event")
	}
	after := h.send(t, "and now?")
	for _, e := range after {
		if b, ok := e.(event.CacheBreak); ok {
			t.Errorf("the first request after compaction reported a break: %+v", b)
		}
	}
	hist := h.sess.History()
	if len(conversation(hist)) != 3 || !strings.Contains(hist[0].TextOf(), "SUMMARY: the user said hello twice.") {
		t.Fatalf("history after compaction = %+v", hist)
	}
	h.sess.Close()

	// Resume starts from the boundary and rebuilds exactly the live history.
	again := newHarness(t, sc, Options{Home: home, Cwd: cwd, Continue: true})
	if diff := cmp.Diff(hist, again.sess.History()); diff != "" {
		t.Errorf("resumed history mismatch (-want +got):\n%s", diff)
	}
}

func TestHooksGetTheRealTranscriptPath(t *testing.T) {
	dir := t.TempDir()
	seen := filepath.Join(dir, "seen.json")
	hook := writeHook(t, dir, "start.sh", "cat > "+seen+"\n")
	settings := `{"hooks":{"UserPromptSubmit":[{"hooks":[{"type":"command","command":"` + hook + `"}]}]}}`
	h := newHarness(t, echoScenario(), Options{SettingsArgs: []string{settings}})
	h.send(t, "hello")
	var in struct {
		TranscriptPath string `json:"transcript_path"`
	}
	data, err := os.ReadFile(seen)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &in); err != nil {
		t.Fatal(err)
	}
	if in.TranscriptPath == "" || in.TranscriptPath != h.sess.TranscriptPath() {
		t.Fatalf("hook saw transcript_path %q, the session writes %q", in.TranscriptPath, h.sess.TranscriptPath())
	}
	if _, err := os.Stat(in.TranscriptPath); err != nil {
		t.Errorf("transcript_path does not exist: %v", err)
	}
}

func TestModelChangeIsReportedAsACacheBreak(t *testing.T) {
	h := newHarness(t, echoScenario(), Options{})
	h.send(t, "hello")
	h.sess.switches.SetModel("claude-opus-4-5")
	var breaks []event.CacheBreak
	for _, e := range h.send(t, "hello again") {
		if b, ok := e.(event.CacheBreak); ok {
			breaks = append(breaks, b)
		}
	}
	if len(breaks) == 0 || breaks[0].Segment != "model" {
		t.Fatalf("breaks = %+v, want one naming the model", breaks)
	}
}

func TestSessionStartContextJoinsTheFirstPrompt(t *testing.T) {
	dir := t.TempDir()
	hook := writeHook(t, dir, "start.sh", `cat >/dev/null
echo '{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"CTX-FROM-START"}}'
`)
	settings := `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"` + hook + `"}]}]}}`
	h := newHarness(t, echoScenario(), Options{SettingsArgs: []string{settings}})
	h.send(t, "hello")
	h.send(t, "again")
	reqs := h.srv.Requests()
	if !strings.Contains(string(reqs[0].Body), "CTX-FROM-START") {
		t.Error("SessionStart context is not in the first request")
	}
	if n := strings.Count(string(reqs[1].Body), "CTX-FROM-START"); n != 1 {
		t.Errorf("SessionStart context appears %d times in the second request, want once (from history)", n)
	}
}
