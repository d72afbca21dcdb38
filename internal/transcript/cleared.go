package transcript

import (
	"encoding/json"
	"fmt"

	"github.com/keel-dev/keel/internal/message"
)

// TypeCleared says tool results of the chain were replaced by stubs in the agent's context
// (package clearing): Value is a [ClearedValue]. The chain entries keep the full results, so
// the file stays append-only and a person reading it sees what the tools returned; replay
// puts the stubs back ([State.Context]) so a resumed agent sends the very messages its last
// request was built from, and the prompt cache it wrote still matches. ParentUUID is the
// newest entry when the clearing happened. A keel that does not know the type skips it, and
// resumes with the full results.
const TypeCleared Type = "cleared"

// ClearedValue is a cleared entry's value.
type ClearedValue struct {
	Results []ClearedResult `json:"results"`
}

// ClearedResult is one tool result replaced by Stub, the text the agent's context holds
// instead (the tool_result's whole content).
type ClearedResult struct {
	ToolUseID string `json:"toolUseId"`
	Stub      string `json:"stub"`
}

// ClearedEntry is the entry recording a clearing made after the entry parent.
func ClearedEntry(parent string, results []ClearedResult) (Entry, error) {
	raw, err := json.Marshal(ClearedValue{Results: results})
	if err != nil {
		return Entry{}, fmt.Errorf("encode cleared entry: %w", err)
	}
	return Entry{Type: TypeCleared, ParentUUID: parent, Value: raw}, nil
}

// addCleared records the results a cleared line names. Replay reads backwards, so a result
// already seen was cleared again later; the newest stub wins.
func (s *State) addCleared(line []byte) bool {
	var e Entry
	if json.Unmarshal(line, &e) != nil {
		return false
	}
	var v ClearedValue
	if json.Unmarshal(e.Value, &v) != nil {
		return false
	}
	if s.Cleared == nil {
		s.Cleared = map[string]string{}
	}
	for _, r := range v.Results {
		if _, seen := s.Cleared[r.ToolUseID]; !seen && r.ToolUseID != "" {
			s.Cleared[r.ToolUseID] = r.Stub
		}
	}
	return true
}

// Context returns the messages of the chain as the agent's context held them: [State.Messages]
// with every tool result a cleared entry names replaced by its stub. Messages holding none
// are shared with the chain, changed ones are copies. A resumed agent continues from these;
// a reader showing the conversation to a person uses Messages, which keeps the full results.
func (s *State) Context() (msgs []message.Message, uuids []string) {
	msgs, uuids = s.Messages()
	if len(s.Cleared) == 0 {
		return msgs, uuids
	}
	return ApplyCleared(msgs, s.Cleared), uuids
}

// ApplyCleared returns msgs with the tool results stubs names (by tool_use id) replaced by
// their stub text; msgs is not modified.
func ApplyCleared(msgs []message.Message, stubs map[string]string) []message.Message {
	out := msgs
	copied := false
	for i, m := range msgs {
		if m.Role != message.RoleUser {
			continue
		}
		var blocks []message.Block
		for j, b := range m.Content {
			stub, ok := stubs[b.ToolUseID]
			if b.Type != message.TypeToolResult || !ok {
				continue
			}
			if blocks == nil {
				blocks = append([]message.Block(nil), m.Content...)
			}
			b.Content = []message.Block{message.Text(stub)}
			blocks[j] = b
		}
		if blocks == nil {
			continue
		}
		if !copied {
			out = append([]message.Message(nil), msgs...)
			copied = true
		}
		out[i] = message.Message{Role: m.Role, Content: blocks}
	}
	return out
}
