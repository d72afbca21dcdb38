package transcript

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/message"
)

func toolCalls(ids ...string) Entry {
	var blocks []message.Block
	for _, id := range ids {
		blocks = append(blocks, message.Block{Type: message.TypeToolUse, ID: id, Name: "Bash", Input: json.RawMessage(`{"command":"true"}`)})
	}
	m := message.Assistant(blocks...)
	return Entry{Type: TypeAssistant, Message: &m}
}

func toolResults(ids ...string) Entry {
	var blocks []message.Block
	for _, id := range ids {
		blocks = append(blocks, message.ToolResult(id, []message.Block{message.Text("ok")}, false))
	}
	m := message.User(blocks...)
	return Entry{Type: TypeUser, Message: &m}
}

// TestToolStartedReplay: replay reports the started calls of the unanswered tool_use blocks,
// with the time they started, and forgets them once their results are in.
func TestToolStartedReplay(t *testing.T) {
	w, path := newSession(t, "s")
	mustAppend(t, w, userText("go"))
	first := mustAppend(t, w, toolCalls("t0"))
	mustAppend(t, w, Entry{Type: TypeToolStarted, ParentUUID: first.UUID, ToolUseID: "t0", ToolName: "Bash"})
	mustAppend(t, w, toolResults("t0"))
	calls := mustAppend(t, w, toolCalls("t1", "t2", "t3"))
	s1 := mustAppend(t, w, Entry{Type: TypeToolStarted, ParentUUID: calls.UUID, ToolUseID: "t1", ToolName: "Bash"})
	mustAppend(t, w, Entry{Type: TypeToolStarted, ParentUUID: calls.UUID, ToolUseID: "t2", ToolName: "Write"})
	if err := w.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	// The entry's header is classified like every other: type, uuid, parentUuid first.
	last := lines(readFile(t, path))
	if got := string(last[len(last)-1]); !strings.HasPrefix(got, `{"type":"tool_started","uuid":"`) || !strings.Contains(got, `"parentUuid":"`+calls.UUID+`"`) {
		t.Fatalf("tool_started line: %s", got)
	}

	st := mustLoad(t, path)
	var ids []string
	for id := range st.Started {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if diff := cmp.Diff([]string{"t1", "t2"}, ids); diff != "" {
		t.Fatalf("started calls mismatch (-want +got):\n%s", diff)
	}
	if got := st.Started["t1"]; got.Name != "Bash" || !got.Started.Equal(s1.Timestamp) {
		t.Errorf("t1 = %+v, want Bash started at %v", got, s1.Timestamp)
	}
	if got := st.Started["t2"].Name; got != "Write" {
		t.Errorf("t2 name %q", got)
	}
	if msgs, _ := st.Messages(); len(msgs) != 4 {
		t.Errorf("tool_started entries must stay off the chain: %d messages", len(msgs))
	}

	mustAppend(t, w, toolResults("t1", "t2", "t3"))
	if st := mustLoad(t, path); len(st.Started) != 0 {
		t.Errorf("answered calls still reported as started: %v", st.Started)
	}
}

// TestResumeFileWithoutACompleteLine: a crash while the first line was written leaves a file
// with no complete line; the session keeps the id of its file name.
func TestResumeFileWithoutACompleteLine(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/0b5e5e76-1111-4d4b-a0d3-df2d9c47c6c6.jsonl"
	if err := os.WriteFile(path, []byte(`{"type":"meta","uuid":"m","par`), 0o600); err != nil {
		t.Fatal(err)
	}
	if st := mustLoad(t, path); st.SessionID != "0b5e5e76-1111-4d4b-a0d3-df2d9c47c6c6" {
		t.Errorf("Load: session id %q", st.SessionID)
	}
	w, st, err := Resume(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if st.SessionID != "0b5e5e76-1111-4d4b-a0d3-df2d9c47c6c6" || st.TornTail == 0 {
		t.Errorf("Resume: %+v", st)
	}
	e, err := w.Append(t.Context(), userText("again"))
	if err != nil || e.SessionID != st.SessionID {
		t.Errorf("append after the repair: %+v, %v", e, err)
	}
}
