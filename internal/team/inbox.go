package team

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/message"
)

// Inbox is one member's mailbox as its loop sees it: a [loop.Observer] that puts unread
// messages into the next request (never one already sent), acked only after the transcript
// holding that request was synced ([Inbox.Ack], called from the end of the turn). A crash in
// between leaves them unacked: the next process delivers them again, unless [Inbox.Reconcile]
// finds them in the resumed history. So a message is never lost and never read twice.
type Inbox struct {
	mb     coord.Mailbox
	name   string
	logger *slog.Logger
	// color names a sender's colour for the rendered tag.
	color func(name string) string
	// consume, if set, sees every message first; true means the runtime handled it (a
	// permission answer, an automatic shutdown) and the model never reads it.
	consume func(ctx context.Context, m coord.Message) bool
	// read, if set, is told of each message the first time it is taken (handed to a request
	// or consumed), for mail latency; a redelivery after a failed request is not a new read.
	read func(m coord.Message)

	// mu guards inflight, seen and reads.
	mu       sync.Mutex
	inflight []string
	seen     map[string]bool
	reads    map[string]bool
}

func newInbox(mb coord.Mailbox, name string, logger *slog.Logger, color func(string) string) *Inbox {
	return &Inbox{mb: mb, name: name, logger: logger, color: color, seen: map[string]bool{}, reads: map[string]bool{}}
}

// take fetches what is unread and not yet handed out, consuming what the runtime handles.
func (in *Inbox) take(ctx context.Context) []coord.Message {
	msgs, err := in.mb.Fetch(ctx, in.name, 0)
	if err != nil {
		in.logger.Warn("read inbox", "member", in.name, "err", err)
	}
	var fresh, done []coord.Message
	in.mu.Lock()
	for _, m := range msgs {
		switch {
		case slices.Contains(in.inflight, m.ID):
		case in.seen[m.ID]:
			done = append(done, m) // delivered before; its ack was lost
		default:
			fresh = append(fresh, m)
		}
	}
	var first []coord.Message
	for _, m := range fresh {
		if !in.reads[m.ID] {
			in.reads[m.ID] = true
			first = append(first, m)
		}
	}
	in.mu.Unlock()
	if in.read != nil {
		for _, m := range first {
			in.read(m)
		}
	}
	var out []coord.Message
	for _, m := range fresh {
		if in.consume != nil && in.consume(ctx, m) {
			done = append(done, m)
			continue
		}
		out = append(out, m)
	}
	if len(done) > 0 {
		ids := make([]string, len(done))
		for i, m := range done {
			ids[i] = m.ID
		}
		if err := in.mb.Ack(ctx, in.name, ids...); err != nil {
			in.logger.Warn("ack handled messages", "member", in.name, "err", err)
		}
	}
	return out
}

// Observe hands the unread messages to the next request, as text blocks.
func (in *Inbox) Observe(ctx context.Context) []message.Block {
	msgs := in.take(ctx)
	if len(msgs) == 0 {
		return nil
	}
	blocks := make([]message.Block, 0, len(msgs))
	in.mu.Lock()
	for _, m := range msgs {
		in.inflight = append(in.inflight, m.ID)
		in.seen[m.ID] = true
		color := ""
		if in.color != nil {
			color = in.color(m.From)
		}
		blocks = append(blocks, message.Text(render(m, color)))
	}
	in.mu.Unlock()
	return blocks
}

// Ack removes the messages handed out by Observe; call it once the transcript that carries
// them is synced.
func (in *Inbox) Ack(ctx context.Context) error {
	in.mu.Lock()
	ids := in.inflight
	in.inflight = nil
	in.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	return in.mb.Ack(context.WithoutCancel(ctx), in.name, ids...)
}

// Requeue makes the messages handed out but not acked deliverable again (the request that
// was to carry them failed before it was recorded).
func (in *Inbox) Requeue() {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, id := range in.inflight {
		delete(in.seen, id)
	}
	in.inflight = nil
}

// Reconcile acks the unread messages that history already holds: they were delivered and
// recorded, but the process died before the ack.
func (in *Inbox) Reconcile(ctx context.Context, history []message.Message) {
	msgs, _ := in.mb.Fetch(ctx, in.name, 0)
	if len(msgs) == 0 {
		return
	}
	var text strings.Builder
	for _, m := range history {
		if m.Role == message.RoleUser {
			for _, b := range m.Content {
				if b.Type == message.TypeText && strings.Contains(b.Text, "<teammate-message") {
					text.WriteString(b.Text)
				}
			}
		}
	}
	all := text.String()
	var ids []string
	for _, m := range msgs {
		if strings.Contains(all, marker(m.ID)) {
			ids = append(ids, m.ID)
		}
	}
	if len(ids) > 0 {
		if err := in.mb.Ack(ctx, in.name, ids...); err != nil {
			in.logger.Warn("ack recorded messages", "member", in.name, "err", err)
		}
	}
}

// Delivered says whether message id went out in a request of this process (acked or not).
func (in *Inbox) Delivered(id string) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.seen[id]
}

// Unread counts the messages waiting that would wake their reader: everything but idle
// notices.
func (in *Inbox) Unread(ctx context.Context) int {
	msgs, _ := in.mb.Fetch(ctx, in.name, 0)
	in.mu.Lock()
	defer in.mu.Unlock()
	n := 0
	for _, m := range msgs {
		if m.Type != TypeIdle && !slices.Contains(in.inflight, m.ID) && !in.seen[m.ID] {
			n++
		}
	}
	return n
}
