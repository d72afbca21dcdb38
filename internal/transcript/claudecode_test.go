package transcript

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/message"
)

// TestLoadClaudeCodeTranscript replays a session shaped as Claude Code 2.1 writes it (fields
// in its order, one line per content block of an assistant reply, progress and attachment
// entries on the chain, a title summary, queue operations, its file-history snapshot and
// custom-title shapes): the conversation comes back whole, as the messages the model saw,
// with the title, and nothing reported as damaged.
func TestLoadClaudeCodeTranscript(t *testing.T) {
	st, err := Load(t.Context(), filepath.Join("testdata", "claude-code-2.1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Repairs.Any() || st.BadLines != 0 || st.Dangling != "" {
		t.Errorf("a sound Claude Code file was read as damaged: repairs %q, bad lines %d, dangling %q", st.Repairs.String(), st.BadLines, st.Dangling)
	}
	msgs, _ := st.Messages()
	var got []string
	for _, m := range msgs {
		line := string(m.Role) + ":"
		for _, b := range m.Content {
			switch b.Type {
			case message.TypeText:
				line += " text(" + b.Text + ")"
			case message.TypeToolUse:
				line += " tool_use(" + b.Name + ")"
			case message.TypeToolResult:
				line += " tool_result"
			default:
				line += " " + b.Type
			}
		}
		got = append(got, line)
	}
	want := []string{
		"user: text(PRB-CC-FIRST Read probe-cc.txt and tell me its code word.)",
		"assistant: text(I'll read the file.)", // one line per block; requests merge them
		"assistant: tool_use(Read)",
		"user: tool_result",
		"assistant: text(The code word is HERON-5521.)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages mismatch (-want +got):\n%s", diff)
	}
	if st.Title() != "Code word hunt" {
		t.Errorf("title %q, want the custom-title line's", st.Title())
	}
	if st.SessionID != "5f0c8a52-3b1e-4c9a-9d57-2c1f6a7e8b90" {
		t.Errorf("session id %q", st.SessionID)
	}
}

// TestLoadRecordedClaudeCodeTranscript: a transcript Claude Code 2.1.333 wrote itself (its
// -p run against keel's scripted model: one Read, then an answer; its request records' system
// prompt, tool schemas and long attachment texts emptied) loads as that conversation, every
// line keel does not know (queue operations, attachments, request records, cost state)
// passed over and none of it called damage.
func TestLoadRecordedClaudeCodeTranscript(t *testing.T) {
	st, err := Load(t.Context(), filepath.Join("testdata", "claude-code-2.1.333-recorded.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Repairs.Any() || st.BadLines != 0 || st.Dangling != "" {
		t.Errorf("Claude Code's own file was read as damaged: repairs %q, bad lines %d, dangling %q", st.Repairs.String(), st.BadLines, st.Dangling)
	}
	msgs, _ := st.Messages()
	var got []string
	for _, m := range msgs {
		for _, b := range m.Content {
			switch b.Type {
			case message.TypeText:
				if !strings.HasPrefix(b.Text, "<system-reminder>") {
					got = append(got, string(m.Role)+": "+b.Text)
				}
			case message.TypeToolUse:
				got = append(got, string(m.Role)+": tool_use "+b.Name)
			case message.TypeToolResult:
				got = append(got, string(m.Role)+": tool_result")
			}
		}
	}
	want := []string{
		"user: what does the note say",
		"assistant: Let me read it.",
		"assistant: tool_use Read",
		"user: tool_result",
		"assistant: The note says the build is green.",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages mismatch (-want +got):\n%s", diff)
	}
	if st.SessionID != "5cc10e44-d65b-416a-9d60-cd4f28b5ae4c" {
		t.Errorf("session id %q", st.SessionID)
	}
}
