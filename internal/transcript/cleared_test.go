package transcript

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/message"
)

func callEntry(id string) Entry {
	m := message.Assistant(message.ToolUse(id, "Read", []byte(`{"file_path":"/p/`+id+`"}`)))
	return Entry{Type: TypeAssistant, Message: &m}
}

func resultEntry(id, text string) Entry {
	m := message.User(message.ToolResult(id, []message.Block{message.Text(text)}, false))
	return Entry{Type: TypeUser, Message: &m}
}

func mustCleared(t *testing.T, w *Writer, parent string, rs ...ClearedResult) {
	t.Helper()
	e, err := ClearedEntry(parent, rs)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, w, e)
}

// results returns, for each tool result of msgs in order, its text.
func results(msgs []message.Message) []string {
	var out []string
	for _, m := range msgs {
		for _, b := range m.Content {
			if b.Type == message.TypeToolResult {
				out = append(out, message.Message{Content: b.Content}.TextOf())
			}
		}
	}
	return out
}

// TestClearedEntries: replay keeps the full results in Messages (the record a person reads)
// and puts the stubs back in Context (what the agent continues from); a clearing before a
// compaction boundary is behind it, and a fork carries the clearings over.
func TestClearedEntries(t *testing.T) {
	w, path := newSession(t, "s")
	mustAppend(t, w, userText("go"))
	mustAppend(t, w, callEntry("t1"))
	mustAppend(t, w, resultEntry("t1", "content one"))
	mustAppend(t, w, callEntry("t2"))
	r2 := mustAppend(t, w, resultEntry("t2", "content two"))
	mustCleared(t, w, r2.UUID, ClearedResult{ToolUseID: "t1", Stub: "[stub one]"})
	mustAppend(t, w, callEntry("t3"))
	r3 := mustAppend(t, w, resultEntry("t3", "content three"))
	mustCleared(t, w, r3.UUID, ClearedResult{ToolUseID: "t2", Stub: "[stub two]"})
	if err := w.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}

	st := mustLoad(t, path)
	full, _ := st.Messages()
	ctx, _ := st.Context()
	if diff := cmp.Diff([]string{"content one", "content two", "content three"}, results(full)); diff != "" {
		t.Errorf("Messages (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"[stub one]", "[stub two]", "content three"}, results(ctx)); diff != "" {
		t.Errorf("Context (-want +got):\n%s", diff)
	}
	if st.BadLines != 0 || len(st.Unknown) != 0 {
		t.Errorf("cleared lines read as %d bad, %d unknown", st.BadLines, len(st.Unknown))
	}
	if results(full)[0] != "content one" {
		t.Error("Context changed the chain's messages")
	}

	// A fork resumes with the same context.
	fw, fst, err := Fork(t.Context(), path, filepath.Join(filepath.Dir(path), "f.jsonl"), testOpts("f"))
	if err != nil {
		t.Fatal(err)
	}
	fw.Close()
	if diff := cmp.Diff(st.Cleared, mustLoad(t, filepath.Join(filepath.Dir(path), "f.jsonl")).Cleared); diff != "" || fst == nil {
		t.Errorf("fork's clearings (-want +got):\n%s", diff)
	}

	// After a compaction the clearings before it are behind the boundary.
	mustAppend(t, w, Entry{Type: TypeSummary, Summary: "read three files"})
	mustAppend(t, w, userText("more"))
	if err := w.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := mustLoad(t, path); len(st.Cleared) != 0 {
		t.Errorf("clearings before the boundary replayed: %v", st.Cleared)
	}
}
