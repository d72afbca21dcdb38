package sessionlog

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/transcript"
)

// opts opens sessions of the project cwd kept in home.
func opts(home, cwd, id string) Options {
	return Options{Homes: []string{home}, FileHistoryHome: home, Cwd: cwd, SessionID: id, Version: "test"}
}

func open(t *testing.T, o Options) Opened {
	t.Helper()
	out, err := Open(context.Background(), o)
	if err != nil {
		t.Fatalf("open %+v: %v", o, err)
	}
	t.Cleanup(func() { out.Log.Writer().Close() })
	return out
}

func record(t *testing.T, l *Log, m message.Message) string {
	t.Helper()
	typ := transcript.TypeUser
	if m.Role == message.RoleAssistant {
		typ = transcript.TypeAssistant
	}
	id, err := l.Record(context.Background(), transcript.Entry{Type: typ, Message: &m})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func texts(ms []message.Message) []string {
	var out []string
	for _, m := range ms {
		for _, b := range m.Content {
			out = append(out, b.Text)
		}
	}
	return out
}

func TestAResumedSessionTakesUpWhatItRecorded(t *testing.T) {
	ctx := context.Background()
	home, cwd := t.TempDir(), t.TempDir()
	first := open(t, opts(home, cwd, "s-1"))
	if first.State != nil || first.SessionID != "s-1" {
		t.Fatalf("a new session: state %v, id %q", first.State, first.SessionID)
	}
	if fi, err := os.Stat(first.ShellDir); err != nil || !fi.IsDir() {
		t.Errorf("the shell's folder %q was not made: %v", first.ShellDir, err)
	}
	ids := []string{record(t, first.Log, message.User(message.Text("question"))), record(t, first.Log, message.Assistant(message.Text("answer")))}
	first.Log.RecordMetadata(ctx, transcript.TypeTodos, []event.Todo{{Content: "write the test", Status: "pending"}})
	first.Log.RecordMetadata(ctx, transcript.TypeMode, "acceptEdits")
	first.Log.RecordMetadata(ctx, transcript.TypeAgentSetting, AgentSetting{Model: "m"})
	if err := first.Log.SetTitle(ctx, "the title"); err != nil {
		t.Fatal(err)
	}
	path := first.Log.Path()
	first.Log.Writer().Close()

	o := opts(home, cwd, "ignored")
	o.Resume = "s-1"
	again := open(t, o)
	if again.SessionID != "s-1" || again.Log.Path() != path || again.State.Title() != "the title" {
		t.Errorf("resumed: id %q at %q, want s-1 at %q", again.SessionID, again.Log.Path(), path)
	}
	r := Replay(ctx, again.State, again.Log)
	if got := texts(r.History); !slices.Equal(got, []string{"question", "answer"}) || !slices.Equal(r.UUIDs, ids) {
		t.Errorf("history %q with ids %v, want question, answer with %v", got, r.UUIDs, ids)
	}
	if len(r.Todos) != 1 || r.Todos[0].Content != "write the test" || r.Mode != "acceptEdits" {
		t.Errorf("todos %+v, mode %q: the recorded ones were not replayed", r.Todos, r.Mode)
	}
	if len(r.Notices) != 0 {
		t.Errorf("a clean transcript gave notices %+v", r.Notices)
	}
}

func TestContinueTakesTheNewestSessionAndForkCopiesIt(t *testing.T) {
	ctx := context.Background()
	home, cwd := t.TempDir(), t.TempDir()
	o := opts(home, cwd, "new")
	o.Continue = true
	if _, err := Open(ctx, o); err == nil || !strings.Contains(err.Error(), "no earlier session") {
		t.Fatalf("--continue with no session: %v", err)
	}
	first := open(t, opts(home, cwd, "s-1"))
	record(t, first.Log, message.User(message.Text("kept")))
	first.Log.Writer().Close()

	cont := open(t, o)
	if cont.SessionID != "s-1" || len(Replay(ctx, cont.State, cont.Log).History) != 1 {
		t.Errorf("--continue opened %q", cont.SessionID)
	}
	cont.Log.Writer().Close()
	o.Continue, o.Resume, o.ForkSession, o.SessionID = false, "s-1", true, "s-2"
	fork := open(t, o)
	if fork.SessionID != "s-2" || fork.Log.Path() == cont.Log.Path() {
		t.Errorf("a fork is %q at %q, want a new session beside s-1", fork.SessionID, fork.Log.Path())
	}
	if got := texts(Replay(ctx, fork.State, fork.Log).History); !slices.Equal(got, []string{"kept"}) {
		t.Errorf("the fork's history is %q", got)
	}
}

func TestReplayAnswersTheCallsACrashLeftOpenAndRecordsTheAnswers(t *testing.T) {
	ctx := context.Background()
	home, cwd := t.TempDir(), t.TempDir()
	first := open(t, opts(home, cwd, "s-1"))
	record(t, first.Log, message.User(message.Text("run it")))
	call := record(t, first.Log, message.Assistant(message.ToolUse("call-1", "Bash", json.RawMessage(`{"command":"make"}`))))
	if _, err := first.Log.Writer().Append(ctx, transcript.Entry{Type: transcript.TypeToolStarted, ParentUUID: call, ToolUseID: "call-1", ToolName: "Bash"}); err != nil {
		t.Fatal(err)
	}
	first.Log.Writer().Close()

	o := opts(home, cwd, "")
	o.Resume = "s-1"
	again := open(t, o)
	r := Replay(ctx, again.State, again.Log)
	last := r.History[len(r.History)-1]
	if last.Role != message.RoleUser || len(last.Content) == 0 || last.Content[0].ToolUseID != "call-1" {
		t.Fatalf("the open call was not answered: last message %+v", last)
	}
	if len(r.Notices) != 1 || !strings.Contains(r.Notices[0].Text, "Bash (call-1) may have run") {
		t.Errorf("notices %+v, want one saying the started call may have run", r.Notices)
	}
	again.Log.Writer().Close()

	third := open(t, o)
	r2 := Replay(ctx, third.State, third.Log)
	if len(r2.History) != len(r.History) || len(r2.Notices) != 0 {
		t.Errorf("the answers were not recorded: a second resume has %d messages (want %d) and notices %+v", len(r2.History), len(r.History), r2.Notices)
	}
}

func TestResumeAtCutsTheHistoryAtTheMessage(t *testing.T) {
	ctx := context.Background()
	home, cwd := t.TempDir(), t.TempDir()
	first := open(t, opts(home, cwd, "s-1"))
	var ids []string
	for _, m := range []message.Message{message.User(message.Text("one")), message.Assistant(message.Text("two")),
		message.User(message.Text("three")), message.Assistant(message.Text("four"))} {
		ids = append(ids, record(t, first.Log, m))
	}
	first.Log.Writer().Close()
	o := opts(home, cwd, "")
	o.Resume = "s-1"
	again := open(t, o)
	r := Replay(ctx, again.State, again.Log)
	if _, _, err := ResumeAt(ctx, r.History, r.UUIDs, "no-such-id", again.Log); err == nil {
		t.Error("resuming at an unknown message did not fail")
	}
	h, u, err := ResumeAt(ctx, r.History, r.UUIDs, ids[1], again.Log)
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(h); !slices.Equal(got, []string{"one", "two"}) || !slices.Equal(u, ids[:2]) {
		t.Errorf("cut at %q: history %q with ids %v", ids[1], got, u)
	}
	next := record(t, again.Log, message.User(message.Text("five")))
	again.Log.Writer().Close()
	third := open(t, o)
	if got := texts(Replay(ctx, third.State, third.Log).History); !slices.Equal(got, []string{"one", "two", "five"}) {
		t.Errorf("after the cut the transcript replays %q (new entry %s), want the branch from two", got, next)
	}
}

func TestWithoutATranscriptNothingIsRecorded(t *testing.T) {
	var l *Log
	id, err := l.Record(context.Background(), transcript.Entry{Type: transcript.TypeUser})
	if err != nil || id == "" {
		t.Errorf("Record without a transcript = %q, %v; want a fresh id", id, err)
	}
	l.RecordMetadata(context.Background(), transcript.TypeMode, "plan")
	if l.Path() != "" || l.SetTitle(context.Background(), "x") == nil {
		t.Error("a session without a transcript has a path or took a title")
	}
}
