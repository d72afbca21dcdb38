package tui

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/keel-dev/keel"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/transcript"
)

// storedSession writes a transcript under home for cwd with the given messages and returns
// its id.
func storedSession(t testing.TB, home, cwd string, msgs ...message.Message) string {
	t.Helper()
	id := "5e55a000-0000-4000-8000-000000000001"
	w, err := transcript.Create(t.Context(), transcript.SessionPath(home, cwd, id), transcript.Options{SessionID: id, CWD: cwd})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		typ := transcript.TypeUser
		if m.Role == message.RoleAssistant {
			typ = transcript.TypeAssistant
		}
		if _, err := w.Append(t.Context(), transcript.Entry{Type: typ, Message: &m}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return id
}

func resumeSession(t testing.TB, home, cwd, id string) *keel.Session {
	t.Helper()
	sess, err := keel.New(t.Context(), keel.Options{Cwd: cwd, Home: home, Model: "claude-test", APIKey: "test",
		BaseURL: "http://127.0.0.1:1", Resume: id})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess
}

// TestResumeShowsHistory: a resumed conversation is on screen before the first prompt —
// prompts, replies, tool calls with their outcome, a teammate's message and a background
// report in words — with the notice of the call a crash left unanswered, and every prompt
// is a rewind point.
func TestResumeShowsHistory(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	grep, _ := json.Marshal(map[string]string{"pattern": "TODO"})
	bash, _ := json.Marshal(map[string]string{"command": "go test ./..."})
	id := storedSession(t, home, cwd,
		message.User(message.Text("find the TODOs")),
		message.Assistant(message.Text("Searching."), message.ToolUse("t1", "Grep", grep)),
		message.User(message.ToolResult("t1", []message.Block{message.Text("main.go:3: TODO")}, false)),
		message.Assistant(message.Text("One TODO, in **main.go**.")),
		message.User(message.Text("<teammate-message teammate_id=\"alice\" id=\"m1\">\nI fixed it\n</teammate-message>")),
		message.Assistant(message.Text("Alice fixed it.")),
		message.User(message.Text("run the tests")),
		message.Assistant(message.ToolUse("t2", "Bash", bash)), // the crash came before its result
	)
	sess := resumeSession(t, home, cwd, id)
	m := New(Config{Backend: sess, NoColor: true, Version: "test", Now: func() time.Time { return epoch }})
	defer m.Close()
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 40})
	golden(t, "resumed", frame(m))
	var prompts []string
	for _, p := range m.prompts {
		prompts = append(prompts, p.text)
	}
	if got := strings.Join(prompts, " | "); got != "find the TODOs | run the tests" {
		t.Errorf("rewind points %q, want the two prompts", got)
	}
}

// TestResumeLongHistoryPages: a long conversation renders only its newest items; pgup at the
// top brings earlier ones in, down to the first prompt.
func TestResumeLongHistoryPages(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	sess := resumeSession(t, home, cwd, storedSession(t, home, cwd, longConversation(500)...))
	m := New(Config{Backend: sess, NoColor: true})
	defer m.Close()
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	if got := frame(m); !strings.Contains(got, "answer 499") || !strings.Contains(m.earlierLine(), "940 earlier messages") {
		t.Fatalf("the newest answer is not shown, or the earlier messages are not announced (%q):\n%s", m.earlierLine(), got)
	}
	rendered := 0
	for _, it := range m.items {
		if it.cache != "" {
			rendered++
		}
	}
	if rendered > historyPage {
		t.Errorf("%d items rendered for the first frame, want at most %d", rendered, historyPage)
	}
	got := frame(m)
	for i := 0; i < 5000 && !strings.Contains(got, "❯ question 0\n"); i++ {
		m.Update(press("pgup"))
		got = frame(m)
	}
	if m.first != 0 || !strings.Contains(got, "❯ question 0\n") {
		t.Errorf("paging up never reached the first prompt (first item %d):\n%s", m.first, got)
	}
	if len(m.prompts) != 500 {
		t.Errorf("%d rewind points, want all 500 prompts", len(m.prompts))
	}
}

func longConversation(n int) []message.Message {
	var msgs []message.Message
	for i := range n {
		msgs = append(msgs, message.User(message.Text(fmt.Sprintf("question %d", i))),
			message.Assistant(message.Text(fmt.Sprintf("answer %d\n\n- a **list**\n- of things", i))))
	}
	return msgs
}

// BenchmarkResumeFirstFrame is the cost of opening the UI on a long resumed conversation: it
// stays that of a short one, since only the newest items are rendered.
func BenchmarkResumeFirstFrame(b *testing.B) {
	for _, n := range []int{50, 5000} {
		b.Run(fmt.Sprint(n, "-prompts"), func(b *testing.B) {
			home, cwd := b.TempDir(), b.TempDir()
			sess := resumeSession(b, home, cwd, storedSession(b, home, cwd, longConversation(n)...))
			for b.Loop() {
				m := New(Config{Backend: sess})
				m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
				_ = m.View()
				m.Close()
			}
		})
	}
}
