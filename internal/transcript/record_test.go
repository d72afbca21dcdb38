package transcript

import (
	"path/filepath"
	"testing"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/message"
)

// Usage and cache-break records sit between chain entries without changing the conversation
// replay rebuilds, and are not counted as damage.
func TestRecordsLeaveReplayAlone(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	w, err := Create(ctx, path, Options{SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	u := message.User(message.Text("hi"))
	a := message.Message{Role: message.RoleAssistant, Content: []message.Block{message.Text("hello")}}
	first, _ := w.Append(ctx, Entry{Type: TypeUser, Message: &u})
	for _, e := range []event.Event{event.CacheBreak{Segment: "tools", Reason: "Bash changed"}, event.Notice{Text: "no record"}} {
		if rec, ok := RecordOf(e); ok {
			if _, err := w.Append(ctx, rec); err != nil {
				t.Fatal(err)
			}
		} else if _, isBreak := e.(event.CacheBreak); isBreak {
			t.Fatal("a cache break leaves no record")
		}
	}
	second, _ := w.Append(ctx, Entry{Type: TypeAssistant, Message: &a})
	rec, ok := RecordOf(event.AssistantMessage{UUID: second.UUID, Model: "m", Usage: message.Usage{InputTokens: 3}})
	if !ok || rec.Type != TypeUsage {
		t.Fatalf("usage record: %+v %v", rec, ok)
	}
	if _, err := w.Append(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := Load(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Chain) != 2 || st.Chain[0].UUID != first.UUID || st.Chain[1].UUID != second.UUID || st.BadLines != 0 {
		t.Errorf("replay: %d entries, bad lines %d; want the two messages and no damage", len(st.Chain), st.BadLines)
	}
}
