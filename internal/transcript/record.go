package transcript

import (
	"encoding/json"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/message"
)

// Record entries log what a session's requests cost and how its prompt cache behaved, for
// readers of the file (the dashboard's plots of cost, tokens and cache read share per
// request, with the cache breaks between them). Replay ignores them: they change nothing in
// the conversation.
const (
	// TypeUsage is one model request of the file's agent: Value is a [UsageValue].
	TypeUsage Type = "usage"
	// TypeCacheBreak is a prompt-cache break of the file's agent: Value is a
	// [CacheBreakValue].
	TypeCacheBreak Type = "cache-break"
)

// UsageValue is a usage entry's value.
type UsageValue struct {
	// UUID is the assistant entry of the reply.
	UUID      string        `json:"uuid,omitempty"`
	Model     string        `json:"model,omitempty"`
	RequestID string        `json:"requestId,omitempty"`
	Usage     message.Usage `json:"usage"`
}

// CacheBreakValue is a cache-break entry's value: the segment of the prefix that changed and
// why.
type CacheBreakValue struct {
	Segment string `json:"segment"`
	Reason  string `json:"reason,omitempty"`
}

// RecordOf returns the record entry an agent's event leaves in that agent's transcript: the
// usage of a reply, a cache break. Other events leave none.
func RecordOf(e event.Event) (Entry, bool) {
	var (
		t Type
		v any
	)
	switch e := e.(type) {
	case event.AssistantMessage:
		t, v = TypeUsage, UsageValue{UUID: e.UUID, Model: e.Model, RequestID: e.RequestID, Usage: e.Usage}
	case event.CacheBreak:
		t, v = TypeCacheBreak, CacheBreakValue{Segment: e.Segment, Reason: e.Reason}
	default:
		return Entry{}, false
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return Entry{}, false
	}
	return Entry{Type: t, Value: raw}, true
}
