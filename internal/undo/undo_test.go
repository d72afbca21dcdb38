package undo

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/snapshot"
)

// conversation is a session's history as an undo sees it, and what a rewind did to it.
type conversation struct {
	history   []message.Message
	ids       []string
	leaf      []string
	forgot    int
	announced []string
	busy      bool
}

func user(text string) message.Message {
	return message.Message{Role: message.RoleUser, Content: []message.Block{message.Text(text)}}
}

func assistant(text string) message.Message {
	return message.Message{Role: message.RoleAssistant, Content: []message.Block{message.Text(text)}}
}

// newConversation is: a prompt, an answer with a tool call's result, a reminder keel added,
// a second prompt and its answer.
func newConversation() *conversation {
	return &conversation{
		history: []message.Message{user("first"), assistant("one"),
			{Role: message.RoleUser, Content: []message.Block{message.ToolResult("t1", []message.Block{message.Text("ok")}, false), message.Text("beside the result")}},
			user("<system-reminder>\nnote\n</system-reminder>"), user("second"), assistant("two")},
		ids: []string{"u1", "a1", "r1", "n1", "u2", "a2"},
	}
}

func (c *conversation) config(cfg Config) Config {
	cfg.History = func() ([]message.Message, []string) { return slices.Clone(c.history), slices.Clone(c.ids) }
	cfg.Cut = func(n int) []message.Message {
		dropped := c.history[n:]
		c.history, c.ids = c.history[:n:n], c.ids[:n:n]
		return dropped
	}
	cfg.Branch = func(_ context.Context, leaf string) error { c.leaf = append(c.leaf, leaf); return nil }
	cfg.Forget = func() { c.forgot++ }
	cfg.Announce = func(r string) { c.announced = append(c.announced, r) }
	cfg.Acquire = func() (func(), error) {
		if c.busy {
			return nil, errors.New("busy")
		}
		return func() {}, nil
	}
	return cfg
}

func TestUserMessages(t *testing.T) {
	c := newConversation()
	u := New(c.config(Config{}))
	var got []string
	for _, e := range u.UserMessages() {
		got = append(got, e.UUID+"="+e.Message.TextOf())
	}
	if want := []string{"u1=first", "u2=second"}; !slices.Equal(got, want) {
		t.Errorf("prompts %v, want %v (tool results and keel's reminders are no prompts)", got, want)
	}
}

func TestRewindConversation(t *testing.T) {
	c := newConversation()
	u := New(c.config(Config{}))
	rep, err := u.Rewind(t.Context(), "n1", false, true)
	if err != nil {
		t.Fatal(err)
	}
	// Dropped: the reminder (not counted), the second prompt and its answer.
	if rep.Messages != 2 || !slices.Equal(c.ids, []string{"u1", "a1", "r1"}) {
		t.Errorf("report %+v, history left %v", rep, c.ids)
	}
	if !slices.Equal(c.leaf, []string{"r1"}) || c.forgot != 1 || !slices.Equal(c.announced, []string{"rewind"}) {
		t.Errorf("branch to %v, views forgotten %d times, announced %v", c.leaf, c.forgot, c.announced)
	}
	if _, err := u.Rewind(t.Context(), "u1", false, true); err != nil || len(c.ids) != 0 || c.leaf[1] != "" {
		t.Errorf("rewind to the first prompt: %v, history %v, branch %q", err, c.ids, c.leaf)
	}
}

func TestRewindRefuses(t *testing.T) {
	c := newConversation()
	u := New(c.config(Config{}))
	if _, err := u.Rewind(t.Context(), "nope", false, true); err == nil || !strings.Contains(err.Error(), "no message nope") {
		t.Errorf("an unknown prompt: %v", err)
	}
	if _, err := u.Rewind(t.Context(), "u2", true, false); err == nil || !strings.Contains(err.Error(), "keeps no file history") {
		t.Errorf("code without a file history: %v", err)
	}
	c.busy = true
	if _, err := u.Rewind(t.Context(), "u2", false, true); err == nil || len(c.ids) != 6 {
		t.Errorf("while busy: %v, history %v", err, c.ids)
	}
}

// TestRewindCodeUndoesTheShell: a turn edits a tracked file and, as a shell command would,
// creates and changes files no tool tracked; rewinding its code puts the directory back as
// the prompt found it, and TurnDiff showed what the turn changed.
func TestRewindCodeUndoesTheShell(t *testing.T) {
	home := t.TempDir()
	dir, err := filepath.EvalSymlinks(t.TempDir()) // the gate hands Track paths with links resolved (macOS's /var is one)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("tracked.txt", "before\n")
	write("shell.txt", "before\n")
	files, err := snapshot.Open(home, "s1")
	if err != nil {
		t.Fatal(err)
	}
	c := newConversation()
	var recorded []string
	u := New(c.config(Config{Files: files, Home: home, Session: "s1", UserHome: t.TempDir(),
		Cwd: func() string { return dir }, RecordSnapshot: func(id string) { recorded = append(recorded, id) }}))
	t.Cleanup(u.Stop)
	u.Warm()

	u.BeginTurn("u2")
	u.TrackEdit(filepath.Join(dir, "tracked.txt"))
	write("tracked.txt", "after\n")
	u.Unrecoverable("Bash", "touch made.txt")
	write("shell.txt", "after\n")
	write("made.txt", "new\n")
	if !slices.Equal(recorded, []string{"u2"}) {
		t.Errorf("snapshots named in the transcript: %v", recorded)
	}

	diff, err := u.TurnDiff(t.Context(), "u2")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"shell.txt", "made.txt", "+after"} {
		if !strings.Contains(diff, want) {
			t.Errorf("the turn's diff lacks %q:\n%s", want, diff)
		}
	}
	if listed, err := u.RewindFiles(t.Context(), "u2", true); err != nil || !slices.Equal(listed, []string{filepath.Join(dir, "tracked.txt")}) {
		t.Errorf("dry run lists %v, %v", listed, err)
	}
	rep, err := u.Rewind(t.Context(), "u2", true, false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Shadow == nil || rep.Shadow.Dir != dir || len(rep.Files.Unrecoverable) != 1 {
		t.Errorf("report %+v", rep)
	}
	for name, want := range map[string]string{"tracked.txt": "before\n", "shell.txt": "before\n"} {
		if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != want {
			t.Errorf("%s is %q after the rewind, want %q", name, b, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "made.txt")); !os.IsNotExist(err) {
		t.Errorf("the file the shell made is still there: %v", err)
	}
	if len(c.ids) != 6 {
		t.Errorf("a rewind of code alone cut the conversation: %v", c.ids)
	}
}

// A directory that cannot be captured costs the shell's undo, said once; the user's home is
// never captured.
func TestCaptureFailureWarnsOnce(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	files, err := snapshot.Open(home, "s1")
	if err != nil {
		t.Fatal(err)
	}
	var warned []string
	bad := filepath.Join(home, "not-a-dir")
	if err := os.WriteFile(bad, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c := newConversation()
	u := New(c.config(Config{Files: files, Home: home, Session: "s1", Cwd: func() string { return bad },
		Warn: func(text string) { warned = append(warned, text) }}))
	u.BeginTurn("u1")
	u.BeginTurn("u2")
	if len(warned) != 1 || !strings.Contains(warned[0], "cannot be rewound this session") {
		t.Errorf("warnings %q", warned)
	}

	u = New(c.config(Config{Files: files, Home: home, Session: "s2", UserHome: dir, Cwd: func() string { return dir }}))
	u.BeginTurn("u1")
	if _, err := u.TurnDiff(t.Context(), "u1"); err == nil || !strings.Contains(err.Error(), "did not capture") {
		t.Errorf("the user's home was captured: %v", err)
	}
}
