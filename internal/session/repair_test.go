package session

import (
	"context"
	"encoding/json"
	"github.com/keel-dev/keel/internal/provider/anthropic"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/transcript"
)

// sideEffect is a tool with side effects that blocks until its call is cancelled, so a test
// can take the transcript as a crash would leave it while the call runs.
func sideEffect(running chan<- struct{}) tool.Tool {
	return tool.New(tool.Spec[struct {
		Step string `json:"step"`
	}]{
		Name: "Deploy", Description: "Deploys; blocks until cancelled.", Schema: json.RawMessage(`{"type":"object","properties":{"step":{"type":"string"}}}`),
		Run: func(ctx context.Context, env *tool.Env, in struct {
			Step string `json:"step"`
		}) tool.Result {
			running <- struct{}{}
			<-ctx.Done()
			return tool.Errorf("cancelled")
		},
	})
}

// TestResumeAfterCrashMidTool takes the transcript as a SIGKILL leaves it while the first of
// two calls with side effects runs, resumes a copy, and checks that the first request after
// the resume is valid and tells the model the first call may have run and the second did not.
func TestResumeAfterCrashMidTool(t *testing.T) {
	cwd := t.TempDir()
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "deploy", When: scripted.Match{UserText: "ship it"}, Times: 1, Reply: []scripted.Block{
			scripted.ToolUse("Deploy", map[string]string{"step": "one"}), scripted.ToolUse("Deploy", map[string]string{"step": "two"})}},
		{Name: "after", Reply: []scripted.Block{scripted.Text("checked")}},
	}}
	running := make(chan struct{}, 2)
	opts := Options{Cwd: cwd, Tools: []tool.Tool{sideEffect(running)}, PermissionMode: "bypassPermissions"}
	first := newHarness(t, sc, opts)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	crashed := filepath.Join(t.TempDir(), "home")
	var rel string
	go func() {
		<-running
		// What is in the file now is what a kill would leave behind.
		src := first.sess.TranscriptPath()
		r, err := filepath.Rel(first.sess.opts.Home, src)
		if err == nil {
			rel = r
			err = copyFile(src, filepath.Join(crashed, r))
		}
		if err != nil {
			t.Error(err)
		}
		cancel()
	}()
	for range first.sess.Send(ctx, "ship it") {
	}
	if rel == "" {
		t.Fatal("the transcript was not copied")
	}
	id := first.sess.ID()

	resumed := opts
	resumed.Home, resumed.Resume = crashed, id
	second := newHarness(t, sc, resumed)
	events := second.send(t, "did it work?")
	if res := result(t, events); res.IsError || res.Text != "checked" {
		t.Fatalf("run after resume: %+v", res)
	}
	reqs := second.srv.Requests()
	if len(reqs) != 1 || reqs[0].Status != 200 {
		t.Fatalf("requests after resume: %+v", reqs)
	}
	sent, err := anthropic.DecodeMessages(reqs[0].Body)
	if err != nil {
		t.Fatal(err)
	}
	last := sent[len(sent)-1]
	var texts []string
	for _, b := range last.Content {
		if b.Type == message.TypeToolResult {
			texts = append(texts, message.Message{Content: b.Content}.TextOf())
		}
	}
	if len(texts) != 2 || !strings.Contains(texts[0], "it may have run (started at ") || !strings.Contains(texts[0], "check before repeating it") ||
		texts[1] != tool.CrashNotRunText {
		t.Errorf("tool results sent after resume = %q", texts)
	}
	if last.TextOf() != "did it work?" {
		t.Errorf("the prompt should follow the results in the same turn: %q", last.TextOf())
	}
	var notice string
	for _, e := range events {
		if n, ok := e.(event.Notice); ok && strings.Contains(n.Text, "may have run") {
			notice = n.Text
		}
	}
	if !strings.Contains(notice, "Deploy") {
		t.Errorf("no notice naming the call that may have run; events %v", events)
	}

	// The repair is an ordinary entry of the transcript: a later resume reads it back.
	second.sess.Close()
	st, err := transcript.Load(t.Context(), filepath.Join(crashed, rel))
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := st.Messages()
	repaired := slices.IndexFunc(msgs, func(m message.Message) bool {
		return len(m.Content) > 0 && m.Content[0].Type == message.TypeToolResult
	})
	if repaired < 1 || len(msgs[repaired].Content) != 2 || msgs[repaired-1].Role != message.RoleAssistant {
		t.Fatalf("transcript after the repair: %+v", msgs)
	}
	if len(st.Started) != 0 {
		t.Errorf("calls still unanswered after the repair: %v", st.Started)
	}
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o600)
}

// TestInterruptTellsWhatMayHaveRun: after an interrupt, the call that was running is answered
// as one that may have partly run, and the one after it as one that did not run.
func TestInterruptTellsWhatMayHaveRun(t *testing.T) {
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "ship"}, Times: 1, Reply: []scripted.Block{
			scripted.ToolUse("Deploy", map[string]string{"step": "one"}), scripted.ToolUse("Deploy", map[string]string{"step": "two"})}},
		{Reply: []scripted.Block{scripted.Text("ok")}},
	}}
	running := make(chan struct{}, 2)
	h := newHarness(t, sc, Options{Tools: []tool.Tool{sideEffect(running)}, PermissionMode: "bypassPermissions"})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() { <-running; cancel() }()
	for range h.sess.Send(ctx, "ship") {
	}
	hist := h.sess.History()
	var texts []string
	for _, b := range hist[len(hist)-1].Content {
		texts = append(texts, message.Message{Content: b.Content}.TextOf())
	}
	if len(texts) != 2 || !strings.HasSuffix(texts[0], tool.InterruptedText) || texts[1] != tool.NotRunText {
		t.Errorf("results after the interrupt = %q", texts)
	}
}

// TestShellCwdFilesStayInTheSession: the cwd files of Bash commands live in the session's
// folder, and one a killed run left there is swept when the session is resumed.
func TestShellCwdFilesStayInTheSession(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "list"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Bash", map[string]string{"command": "ls \"$SESSION_TMP\""})}},
		{Reply: []scripted.Block{scripted.Text("ok")}},
	}}
	first := newHarness(t, sc, Options{Home: home, Cwd: cwd, PermissionMode: "bypassPermissions"})
	dir := filepath.Join(transcript.SessionDir(first.sess.TranscriptPath()), "tmp")
	t.Setenv("SESSION_TMP", dir)
	first.send(t, "list it")
	out, _ := toolResultText(t, first.sess.History())
	if !strings.Contains(out, "keel-cwd-") {
		t.Errorf("the command's cwd file is not in the session folder: %q", out)
	}
	first.sess.Close()
	left := filepath.Join(dir, "keel-cwd-killed")
	if err := os.WriteFile(left, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	newHarness(t, sc, Options{Home: home, Cwd: cwd, Continue: true})
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("the cwd file a killed run left was not swept: %v", err)
	}
}
