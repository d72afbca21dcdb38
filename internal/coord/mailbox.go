package coord

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Message is one piece of mail between members. The backend reads only ID, To, Sent and the
// size; Type, Text, Summary and Data are the team's (plain messages, shutdown and
// plan-approval requests and responses, permission answers, idle notices).
type Message struct {
	// ID identifies the message for deduplication; required ([NewID]). A retried send keeps
	// its id, so the receiver sees it once.
	ID   string `json:"id"`
	From string `json:"from"`
	To   string `json:"to"`
	// Type is "message" (or empty) for plain text; structured types are named by the team.
	Type    string          `json:"type,omitempty"`
	Text    string          `json:"text,omitempty"`
	Summary string          `json:"summary,omitempty"`
	Data    json.RawMessage `json:"data,omitempty"`
	// Sent orders an inbox; a backend sets it when it is zero, never backwards for one handle,
	// so one sender's messages arrive in the order sent.
	Sent time.Time `json:"sent"`
}

// Size is the message's encoded size, which the budgets count.
func (m Message) Size() int {
	b, err := json.Marshal(m)
	if err != nil {
		return 0
	}
	return len(b)
}

// Check reports a message that no backend may store: no id, no recipient or one that is no
// member name, or one larger than limits allow.
func (m Message) Check(limits Limits) error {
	switch {
	case m.ID == "":
		return fmt.Errorf("send message: no id: %w", ErrInvalid)
	case m.To == "":
		return fmt.Errorf("send message %s: no recipient: %w", m.ID, ErrInvalid)
	}
	if n := m.Size(); limits.MessageBytes > 0 && n > limits.MessageBytes {
		return fmt.Errorf("send message to %s: %d bytes is over the %d-byte budget per message; shorten it or put the detail in a file and send its path: %w",
			m.To, n, limits.MessageBytes, ErrTooLarge)
	}
	if err := CheckName(m.To); err != nil {
		return fmt.Errorf("send message: %w", err)
	}
	return nil
}

// Mailbox holds one inbox per member name.
type Mailbox interface {
	// Send puts msg into the inbox of msg.To. A message whose id that inbox already holds or
	// has delivered is dropped without error. An oversize message fails with [ErrTooLarge],
	// a full inbox with [ErrInboxFull]; then nothing is stored.
	Send(ctx context.Context, msg Message) error
	// Fetch returns member's unacked messages, oldest first, at most max of them (0: all).
	// Until acked they are returned by every Fetch, from any handle: that is redelivery.
	Fetch(ctx context.Context, member string, max int) ([]Message, error)
	// Ack removes delivered messages from member's inbox. Unknown or already acked ids are
	// not an error, so an ack may be repeated after a crash.
	Ack(ctx context.Context, member string, ids ...string) error
	// Watch signals whenever member's inbox may have gained a message.
	Watch(ctx context.Context, member string) (<-chan struct{}, error)
}

// MailLog is an optional ability of a [Mailbox]: the messages a member already acked,
// oldest first, the newest limit of them (0: all kept). `keel team messages` shows them.
type MailLog interface {
	Delivered(ctx context.Context, member string, limit int) ([]Message, error)
}
