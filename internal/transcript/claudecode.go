package transcript

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/keel-dev/keel/internal/message"
)

// Claude Code writes the same layout keel does (keel reads and continues its sessions, and
// the Agent SDK's session functions read keel's), with a few shapes of its own that keel's
// decoder would otherwise refuse or misread:
//
//   - a message's content may be a plain string instead of a list of blocks, and so may a
//     tool_result's content;
//   - custom-title lines carry the title as customTitle, not value;
//   - a summary line without a uuid is a title an older Claude Code wrote for the session
//     (with the leafUuid it summarised), not a compaction boundary.
//
// Other entries of its own (progress, attachment, queue-operation, last-prompt…) are types
// keel does not know: kept, passed over on the chain, never called damaged.

// normalizeForeign rewrites a line keel's decoder refused into keel's shapes: string content
// becomes one text block. It reports whether anything changed. It runs only after the plain
// decode failed, so keel's own lines never pay for it.
func normalizeForeign(line []byte) ([]byte, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(line, &obj) != nil {
		return nil, false
	}
	raw, ok := obj["message"]
	if !ok {
		return nil, false
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(raw, &msg) != nil {
		return nil, false
	}
	content, changed := normalizeContent(msg["content"])
	if !changed {
		return nil, false
	}
	msg["content"] = content
	b, err := json.Marshal(msg)
	if err != nil {
		return nil, false
	}
	obj["message"] = b
	out, err := json.Marshal(obj)
	return out, err == nil
}

// normalizeContent turns a string content into [{"type":"text","text":…}] and does the same
// inside each tool_result block of a list.
func normalizeContent(raw json.RawMessage) (json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return raw, false
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return raw, false
		}
		b, _ := json.Marshal([]map[string]string{{"type": "text", "text": s}})
		return b, true
	}
	var blocks []map[string]json.RawMessage
	if raw[0] != '[' || json.Unmarshal(raw, &blocks) != nil {
		return raw, false
	}
	changed := false
	for _, b := range blocks {
		if c, ok := b["content"]; ok {
			if n, ch := normalizeContent(c); ch {
				b["content"], changed = n, true
			}
		}
	}
	if !changed {
		return raw, false
	}
	out, err := json.Marshal(blocks)
	return out, err == nil
}

// onlyReminders says a user message holds nothing but <system-reminder> text: context keel
// added (memory, listings, notices), not a prompt.
func onlyReminders(m *message.Message) bool {
	if m == nil || len(m.Content) == 0 {
		return false
	}
	for _, b := range m.Content {
		if b.Type != message.TypeText || !strings.HasPrefix(strings.TrimSpace(b.Text), "<system-reminder>") {
			return false
		}
	}
	return true
}
