package transcript

import (
	"fmt"
	"io"
	"time"

	"github.com/keel-dev/keel/internal/message"
)

// ToolStart is a tool_started entry: a call with side effects that began at Started.
type ToolStart struct {
	ToolUseID string
	Name      string
	Started   time.Time
}

// span is where a line is in the file.
type span struct {
	off int64
	n   int
}

// resolveStarts fills st.Started with the tool_started entries of the calls the chain leaves
// unanswered: a tool_use of an assistant entry whose next chain entry holds no result for it.
// starts maps an assistant entry's uuid to its tool_started lines, found by the backward scan;
// only the lines of unanswered calls are decoded.
func resolveStarts(r io.ReaderAt, st *State, starts map[string][]span) error {
	if len(starts) == 0 {
		return nil
	}
	for i, e := range st.Chain {
		if e.Type != TypeAssistant || e.Message == nil || len(starts[e.UUID]) == 0 {
			continue
		}
		open := unanswered(e.Message, nextMessage(st.Chain, i))
		if len(open) == 0 {
			continue
		}
		for _, sp := range starts[e.UUID] {
			line := make([]byte, sp.n)
			if _, err := r.ReadAt(line, sp.off); err != nil {
				return fmt.Errorf("read tool_started entry at %d: %w", sp.off, err)
			}
			te, err := decodeEntry(line)
			if err != nil || !open[te.ToolUseID] {
				continue
			}
			if st.Started == nil {
				st.Started = map[string]ToolStart{}
			}
			st.Started[te.ToolUseID] = ToolStart{ToolUseID: te.ToolUseID, Name: te.ToolName, Started: te.Timestamp}
		}
	}
	return nil
}

// nextMessage is the message of the chain entry after i, or nil.
func nextMessage(chain []Entry, i int) *message.Message {
	for _, e := range chain[i+1:] {
		if e.Type == TypeUser || e.Type == TypeAssistant {
			return e.Message
		}
	}
	return nil
}

// unanswered returns the tool_use ids of m that next does not answer.
func unanswered(m, next *message.Message) map[string]bool {
	open := map[string]bool{}
	for _, b := range m.ToolUses() {
		open[b.ID] = true
	}
	if next != nil && next.Role == message.RoleUser {
		for _, b := range next.Content {
			if b.Type == message.TypeToolResult {
				delete(open, b.ToolUseID)
			}
		}
	}
	return open
}
