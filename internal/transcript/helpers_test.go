package transcript

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/message"
)

// fixedClock returns a clock that ticks one second per call from a fixed start.
func fixedClock() func() time.Time {
	t := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	return func() time.Time { t = t.Add(time.Second); return t }
}

func testOpts(id string) Options {
	return Options{SessionID: id, CWD: "/src/proj", GitBranch: "main", Version: "0.0.0-test", Now: fixedClock()}
}

func newSession(t *testing.T, id string) (*Writer, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "projects", "p", id+".jsonl")
	w, err := Create(t.Context(), path, testOpts(id))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, path
}

func userText(s string) Entry {
	m := message.User(message.Text(s))
	return Entry{Type: TypeUser, Message: &m}
}

func assistantText(s string) Entry {
	m := message.Assistant(message.Text(s))
	return Entry{Type: TypeAssistant, Message: &m}
}

func mustAppend(t *testing.T, w *Writer, e Entry) Entry {
	t.Helper()
	got, err := w.Append(t.Context(), e)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func mustLoad(t *testing.T, path string) *State {
	t.Helper()
	st, err := Load(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// texts returns the text of each message on the chain, for compact comparisons.
func texts(st *State) []string {
	msgs, _ := st.Messages()
	out := []string{}
	for _, m := range msgs {
		out = append(out, m.TextOf())
	}
	return out
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func appendBytes(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

func lines(b []byte) [][]byte {
	return bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
}

var _ = context.Background
