package compact

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/transcript"
)

func TestThreshold(t *testing.T) {
	for _, tc := range []struct {
		window  int64
		percent float64
		want    int64
	}{{200_000, 0, 170_000}, {200_000, 50, 100_000}, {30_000, 0, 25_500}} {
		if got := Threshold(tc.window, tc.percent); got != tc.want {
			t.Errorf("Threshold(%d, %v) = %d, want %d", tc.window, tc.percent, got, tc.want)
		}
	}
}

func TestShouldCompact(t *testing.T) {
	c := New(Config{Threshold: func() int64 { return 1000 }})
	if c.ShouldCompact(0) || c.ShouldCompact(999) || !c.ShouldCompact(1000) {
		t.Error("compacts below the threshold, or not at it")
	}
	if New(Config{}).ShouldCompact(1 << 40) {
		t.Error("a compactor without a threshold compacts")
	}
}

// A transcript that was compacted continues from its boundary's summary.
func TestHistoryStartsAtTheBoundary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	w, err := transcript.Create(t.Context(), path, transcript.Options{SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []transcript.Entry{
		{Type: transcript.TypeUser, Message: ptr(message.User(message.Text("before")))},
		{Type: transcript.TypeSummary, Summary: "SUMMARY"},
		{Type: transcript.TypeUser, Message: ptr(message.User(message.Text("after")))},
	} {
		if _, err := w.Append(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := transcript.Load(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	h := History(st)
	if len(h) != 2 || h[0].TextOf() != SummaryMessage("SUMMARY").TextOf() || h[1].TextOf() != "after" {
		t.Errorf("history %v; want the summary, then \"after\"", h)
	}
}

func ptr(m message.Message) *message.Message { return &m }

// The summary prompt asks for paths and decisions and forbids copying what can be read again:
// the summary is read on every later request.
func TestPromptAsksForPathsNotContent(t *testing.T) {
	for _, want := range []string{"the paths of the files read and of the files changed", "decisions made and why",
		"Do not copy file contents, code or tool output that can be read again", "read it again when you need it"} {
		if !strings.Contains(Prompt, want) {
			t.Errorf("the summary prompt lacks %q", want)
		}
	}
}
