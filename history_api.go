package keel

import (
	"context"

	"github.com/keel-dev/keel/internal/message"
)

// History returns the conversation the session holds — for a resumed session, the one it
// continues — as the events a live run streamed: a [UserMessage] for each user entry (prompts,
// tool results, keel's reminders) and an [AssistantMessage] for each reply, oldest first, each
// with its transcript uuid (the id [Session.Rewind] takes). A compacted conversation starts
// with the summary that stands for what came before. What keel repaired on resume is in
// [Session.Notices].
func (s *Session) History() []Event {
	msgs, uuids := s.s.Transcript().HistoryEntries()
	out := make([]Event, 0, len(msgs))
	for i, m := range msgs {
		id := ""
		if i < len(uuids) {
			id = uuids[i]
		}
		if m.Role == message.RoleAssistant {
			out = append(out, AssistantMessage{UUID: id, Message: convert[Message](m)})
		} else {
			out = append(out, UserMessage{UUID: id, Message: convert[Message](m)})
		}
	}
	return out
}

// SetTitle names the session: [ListSessions] shows the title, and [FindSession] finds the
// session by it.
func (s *Session) SetTitle(ctx context.Context, title string) error {
	return s.s.Transcript().SetTitle(ctx, title)
}
