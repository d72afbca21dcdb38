package session

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/tool"
)

func echoScenario() *scripted.Scenario {
	return &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "count", When: scripted.Match{UserText: "count"}, Reply: []scripted.Block{scripted.Text("counting"), scripted.ToolUse("Count", map[string]string{"note": "n"})}},
		{Name: "after", When: scripted.Match{ToolResult: "Count"}, Reply: []scripted.Block{scripted.Text("counted")}},
		{Name: "hello", Reply: []scripted.Block{scripted.Text("hello")}},
	}}
}

// lastBody is the body of the newest request the server saw.
func lastBody(t *testing.T, h *harness) []byte {
	t.Helper()
	reqs := h.srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("no requests")
	}
	return reqs[len(reqs)-1].Body
}

// TestResumeSendsTheSameBytes checks the request after a resume equals, byte for byte, the
// request an uninterrupted session sends at that point, so it hits the prompt cache.
func TestResumeSendsTheSameBytes(t *testing.T) {
	cwd := t.TempDir()
	c := &counter{}
	opts := Options{Cwd: cwd, Tools: []tool.Tool{c.tool()}}

	// One keel directory for both, so the auto memory section names the same directory.
	home := t.TempDir()
	straight := newHarness(t, echoScenario(), withHome(opts, home))
	straight.send(t, "count once")
	straight.send(t, "and hello")
	want := lastBody(t, straight)

	first := newHarness(t, echoScenario(), withHome(opts, home))
	first.send(t, "count once")
	id := first.sess.ID()
	if err := first.sess.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	resumed := withHome(opts, home)
	resumed.Resume = id
	second := newHarness(t, echoScenario(), resumed)
	if second.sess.ID() != id {
		t.Fatalf("resumed session id = %s, want %s", second.sess.ID(), id)
	}
	second.send(t, "and hello")
	if got := lastBody(t, second); !bytes.Equal(got, want) {
		t.Errorf("request after resume differs from the uninterrupted one:\nwant %s\n got %s", want, got)
	}

	cont := withHome(opts, home)
	cont.Continue, cont.ForkSession = true, true
	forked := newHarness(t, echoScenario(), cont)
	if forked.sess.ID() == id {
		t.Fatal("--fork-session kept the original id")
	}
	if got := len(conversation(forked.sess.History())); got != 6 {
		t.Errorf("forked history has %d messages, want 6", got)
	}
	forked.send(t, "hello again")
	if err := forked.sess.Close(); err != nil {
		t.Fatal(err)
	}
	// The original is untouched by the fork's new turn.
	orig, err := os.ReadFile(second.sess.TranscriptPath())
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(orig, []byte("hello again")) {
		t.Error("the fork wrote into the original transcript")
	}
}

func withHome(o Options, home string) Options {
	o.Home = home
	return o
}

func TestResumeReportsTornTail(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	first := newHarness(t, echoScenario(), Options{Home: home, Cwd: cwd})
	first.send(t, "hi")
	path := first.sess.TranscriptPath()
	first.sess.Close()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"type":"user","uuid":"x","parentUuid":`)
	f.Close()

	second := newHarness(t, echoScenario(), Options{Home: home, Cwd: cwd, Continue: true})
	events := second.send(t, "again")
	var notice string
	for _, e := range events {
		if n, ok := e.(event.Notice); ok && strings.Contains(n.Text, "incomplete entry") {
			notice = n.Text
		}
	}
	if !strings.Contains(notice, "bytes") {
		t.Errorf("no torn-tail notice naming the bytes skipped; events: %v", events)
	}
	if got := len(conversation(second.sess.History())); got != 4 {
		t.Errorf("history after resume has %d messages, want 4", got)
	}
}

func TestSecondProcessCannotResumeAnOpenSession(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	first := newHarness(t, echoScenario(), Options{Home: home, Cwd: cwd})
	first.send(t, "hi")
	_, err := New(t.Context(), Options{Home: home, Cwd: cwd, Resume: first.sess.ID(), Provider: first.sess.opts.Provider,
		ManagedSettingsPath: "-", ManagedMemoryPath: "-"})
	if err == nil || !strings.Contains(err.Error(), "--fork-session") {
		t.Fatalf("resume of an open session: err = %v, want a refusal suggesting --fork-session", err)
	}
}

func TestRewindRestoresFilesAndConversation(t *testing.T) {
	cwd := t.TempDir()
	file := filepath.Join(cwd, "a.txt")
	os.WriteFile(file, []byte("one\n"), 0o644)
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "read", When: scripted.Match{UserText: "first"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Read", map[string]string{"file_path": "a.txt"})}},
		{Name: "edit1", When: scripted.Match{ToolResult: "Read"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Edit", map[string]string{"file_path": "a.txt", "old_string": "one", "new_string": "two"})}},
		{Name: "create", When: scripted.Match{UserText: "second"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Write", map[string]string{"file_path": "b.txt", "content": "new\n"})}},
		{Name: "edit2", When: scripted.Match{UserText: "third"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Edit", map[string]string{"file_path": "a.txt", "old_string": "two", "new_string": "three"})}},
		{Name: "ok", Reply: []scripted.Block{scripted.Text("ok")}},
	}}
	h := newHarness(t, sc, Options{Cwd: cwd, PermissionMode: "acceptEdits"})
	tree := func() string {
		a, _ := os.ReadFile(file)
		b, err := os.ReadFile(filepath.Join(cwd, "b.txt"))
		if err != nil {
			return "a=" + string(a) + " b=<none>"
		}
		return "a=" + string(a) + " b=" + string(b)
	}
	states := []string{tree()}
	for _, p := range []string{"first", "second", "third"} {
		h.send(t, p)
		states = append(states, tree())
	}
	if states[3] != "a=three\n b=new\n" {
		t.Fatalf("final tree = %q", states[3])
	}
	prompts := h.sess.undo.UserMessages()
	if len(prompts) != 3 {
		t.Fatalf("rewind points = %d, want 3", len(prompts))
	}
	// Back to before "third", then before "second", then before "first".
	for i := 2; i >= 0; i-- {
		rep, err := h.sess.undo.Rewind(t.Context(), prompts[i].UUID, true, true)
		if err != nil {
			t.Fatalf("rewind to prompt %d: %v", i, err)
		}
		if got := tree(); got != states[i] {
			t.Errorf("after rewind to prompt %d tree = %q, want %q (report %+v)", i, got, states[i], rep)
		}
		if got := len(h.sess.undo.UserMessages()); got != i {
			t.Errorf("after rewind to prompt %d there are %d prompts left, want %d", i, got, i)
		}
	}
}

func TestResumeRestoresTodosAndMode(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "plan"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("TodoWrite", map[string]any{
			"todos": []map[string]string{{"content": "write tests", "status": "in_progress", "activeForm": "Writing tests"}}})}},
		{Reply: []scripted.Block{scripted.Text("ok")}},
	}}
	first := newHarness(t, sc, Options{Home: home, Cwd: cwd})
	first.send(t, "plan the work")
	if err := first.sess.SetPermissionMode("acceptEdits"); err != nil {
		t.Fatal(err)
	}
	first.sess.Close()

	again := newHarness(t, sc, Options{Home: home, Cwd: cwd, Continue: true})
	if got := again.sess.PermissionMode(); got != "acceptEdits" {
		t.Errorf("mode after resume = %q, want acceptEdits", got)
	}
	if got := again.sess.todos.List(); len(got) != 1 || got[0].Content != "write tests" {
		t.Errorf("todos after resume = %+v", got)
	}
}

// TestResumeReportsRepairs: a transcript whose first message was appended again (its uuid on
// two lines) resumes whole, and the repair is reported in a notice with its count.
func TestResumeReportsRepairs(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	first := newHarness(t, echoScenario(), Options{Home: home, Cwd: cwd})
	first.send(t, "hi")
	first.send(t, "again")
	path := first.sess.TranscriptPath()
	first.sess.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var firstUser []byte
	for l := range bytes.Lines(data) {
		if bytes.HasPrefix(l, []byte(`{"type":"user"`)) {
			firstUser = l
			break
		}
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(firstUser)
	f.Close()

	second := newHarness(t, echoScenario(), Options{Home: home, Cwd: cwd, Continue: true})
	var notice string
	for _, e := range second.send(t, "third") {
		if n, ok := e.(event.Notice); ok && strings.Contains(n.Text, "repair") {
			notice = n.Text
		}
	}
	if !strings.Contains(notice, "1 line repeated an earlier entry") {
		t.Errorf("no repair notice with its count: %q", notice)
	}
	if got := len(conversation(second.sess.History())); got != 6 {
		t.Errorf("history after resume has %d messages, want 6", got)
	}
}
