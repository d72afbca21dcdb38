package keel_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/keel-dev/keel"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/transcript"
	"github.com/keel-dev/keel/keeltest"
)

// storeSession writes a transcript for cwd under home with one prompt and, if given, a title.
func storeSession(t *testing.T, home, cwd, id, prompt, title string) {
	t.Helper()
	w, err := transcript.Create(t.Context(), transcript.SessionPath(home, cwd, id), transcript.Options{SessionID: id, CWD: cwd})
	if err != nil {
		t.Fatal(err)
	}
	m := message.User(message.Text(prompt))
	entries := []transcript.Entry{{Type: transcript.TypeUser, Message: &m}}
	if title != "" {
		raw, _ := json.Marshal(title)
		entries = append(entries, transcript.Entry{Type: transcript.TypeCustomTitle, Value: raw})
	}
	for _, e := range entries {
		if _, err := w.Append(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestFindSession(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	storeSession(t, home, cwd, "3f2a0000-0000-4000-8000-000000000001", "fix the parser", "Parser fix")
	storeSession(t, home, cwd, "3f2b0000-0000-4000-8000-000000000002", "add a test", "")
	storeSession(t, home, cwd, "9c000000-0000-4000-8000-000000000003", "write docs", "Docs")
	storeSession(t, home, cwd, "9d000000-0000-4000-8000-000000000004", "more docs", "docs")

	for _, tt := range []struct{ query, want string }{
		{"3f2a0000-0000-4000-8000-000000000001", "3f2a0000-0000-4000-8000-000000000001"},
		{"3f2b", "3f2b0000-0000-4000-8000-000000000002"},
		{"parser FIX", "3f2a0000-0000-4000-8000-000000000001"},
		{" 9c ", "9c000000-0000-4000-8000-000000000003"},
	} {
		got, err := keel.FindSession(home, cwd, tt.query)
		if err != nil || got.ID != tt.want {
			t.Errorf("FindSession(%q) = %q, %v; want %s", tt.query, got.ID, err, tt.want)
		}
	}
	for _, tt := range []struct {
		query string
		want  []string // in the error, each on a line of its own where an id
	}{
		{"3f2", []string{"is the start of 2 session ids", "\n  3f2a0000-0000-4000-8000-000000000001", "\n  3f2b0000-0000-4000-8000-000000000002"}},
		{"docs", []string{"2 sessions are titled", "\n  9c000000", "\n  9d000000"}},
		{"nothing-like-it", []string{"no session has the id, id prefix or title", "recent sessions:", "\n  3f2a0000", "Parser fix", "add a test"}},
	} {
		_, err := keel.FindSession(home, cwd, tt.query)
		if err == nil {
			t.Errorf("FindSession(%q) found a session", tt.query)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("FindSession(%q) error lacks %q:\n%v", tt.query, w, err)
			}
		}
	}
	if _, err := keel.FindSession(home, t.TempDir(), "x"); err == nil || !strings.Contains(err.Error(), "no sessions") {
		t.Errorf("an empty directory: %v", err)
	}
}

// New resumes what Resume names as --resume does from every entry point: an id prefix or a
// title is the stored session it names; the choice only a frontend can offer fails, listing
// the recent sessions.
func TestNewResumesByPrefixOrTitle(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	storeSession(t, home, cwd, "3f2a0000-0000-4000-8000-000000000001", "fix the parser", "Parser fix")
	storeSession(t, home, cwd, "3f2b0000-0000-4000-8000-000000000002", "add a test", "")
	model, err := keeltest.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	for query, want := range map[string]string{"parser fix": "3f2a0000-0000-4000-8000-000000000001", "3f2b": "3f2b0000-0000-4000-8000-000000000002"} {
		opts := model.Options(cwd, home)
		opts.Resume = query
		sess, err := keel.New(t.Context(), opts)
		if err != nil {
			t.Fatalf("New(Resume: %q): %v", query, err)
		}
		if sess.ID() != want {
			t.Errorf("New(Resume: %q) resumed %s, want %s", query, sess.ID(), want)
		}
		if err := sess.Close(); err != nil {
			t.Fatal(err)
		}
	}
	opts := model.Options(cwd, home)
	opts.Resume = keel.ResumeChoose
	if _, err := keel.New(t.Context(), opts); err == nil || !strings.Contains(err.Error(), "recent sessions:") || !strings.Contains(err.Error(), "Parser fix") {
		t.Errorf("New(ResumeChoose) = %v; want the recent sessions listed", err)
	}
}
