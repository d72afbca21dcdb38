package natscoord

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/lazy"
)

// deliveredTTL is how long a delivered message is remembered: its history for `keel team
// messages`, and the window in which a late resend of its id is dropped.
const deliveredTTL = 7 * 24 * time.Hour

type mailbox struct {
	b *Backend

	// mu guards lastSent and inboxes.
	mu       sync.Mutex
	lastSent time.Time
	inboxes  map[string]*inbox
}

var (
	_ coord.Mailbox = (*mailbox)(nil)
	_ coord.MailLog = (*mailbox)(nil)
)

func newMailbox(b *Backend) *mailbox { return &mailbox{b: b, inboxes: map[string]*inbox{}} }

// inbox is what this handle last read of one member's inbox: the unacked messages in stream
// order. It is refreshed incrementally — only messages past the last one read are fetched —
// and read again whole only when the stream holds fewer than remembered (some were acked).
type inbox struct {
	// mu guards msgs and next, and serializes this handle's reads of the inbox.
	mu   sync.Mutex
	msgs []stored
	next uint64
}

type stored struct {
	seq  uint64
	size int
	msg  coord.Message
}

func (m *mailbox) inbox(member string) *inbox {
	m.mu.Lock()
	defer m.mu.Unlock()
	in, ok := m.inboxes[member]
	if !ok {
		in = &inbox{next: 1}
		m.inboxes[member] = in
	}
	return in
}

// refresh brings member's inbox up to date and returns its messages in stream order and the
// sequence of the last, which a send names as the expected last sequence of the subject.
func (m *mailbox) refresh(ctx context.Context, member string) ([]stored, uint64, error) {
	in := m.inbox(member)
	in.mu.Lock()
	defer in.mu.Unlock()
	subj := m.b.mailSubject(member)
	info, err := m.b.mailStr.Info(ctx, jetstream.WithSubjectFilter(subj))
	if err != nil {
		return nil, 0, err
	}
	count := int(info.State.Subjects[subj])
	if count == 0 {
		in.msgs = nil
		in.next = max(in.next, info.State.LastSeq+1)
		return nil, 0, nil
	}
	var errs []error
	if err := m.readFrom(ctx, in, member, in.next, &errs); err != nil {
		return nil, 0, err
	}
	// Of the messages stored when the count was taken, more are remembered than the stream
	// holds: some were acked since. Read the inbox again from its oldest remembered message
	// (nothing older can appear: sequences only grow).
	known := 0
	for _, s := range in.msgs {
		if s.seq <= info.State.LastSeq {
			known++
		}
	}
	if known > count {
		from := in.msgs[0].seq
		in.msgs = nil
		if err := m.readFrom(ctx, in, member, from, &errs); err != nil {
			return nil, 0, err
		}
	}
	var last uint64
	if len(in.msgs) > 0 {
		last = in.msgs[len(in.msgs)-1].seq
	}
	return slices.Clone(in.msgs), last, errors.Join(errs...)
}

// readFrom appends member's messages from sequence seq on.
func (m *mailbox) readFrom(ctx context.Context, in *inbox, member string, seq uint64, errs *[]error) error {
	subj := m.b.mailSubject(member)
	for {
		raw, err := m.b.mailStr.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subj))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		seq = raw.Sequence + 1
		in.next = seq
		var msg coord.Message
		if err := json.Unmarshal(raw.Data, &msg); err != nil {
			*errs = append(*errs, m.setAside(ctx, member, raw, err))
			continue
		}
		in.msgs = append(in.msgs, stored{seq: raw.Sequence, size: len(raw.Data), msg: msg})
	}
}

// setAside moves a message that is not a message out of the inbox, keeping its bytes under
// bad.<member>.<seq> for inspection, so that it is reported once and never blocks the rest.
func (m *mailbox) setAside(ctx context.Context, member string, raw *jetstream.RawStreamMsg, cause error) error {
	key := fmt.Sprintf("bad.%s.%d", member, raw.Sequence)
	if _, err := m.b.stateKV.Put(ctx, key, raw.Data); err == nil {
		_ = m.b.mailStr.DeleteMsg(ctx, raw.Sequence)
	}
	return fmt.Errorf("message %d of %s's inbox is not a keel message (%v); its bytes are kept under %s in bucket %s: %w",
		raw.Sequence, member, cause, key, m.b.stateKV.Bucket(), coord.ErrCorrupt)
}

// stamp gives a message its send time: the clock's, but never at or before this handle's
// previous one, so one sender's messages sort in the order sent.
func (m *mailbox) stamp(msg *coord.Message) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if msg.Sent.IsZero() {
		msg.Sent = m.b.cfg.Now()
	}
	if !msg.Sent.After(m.lastSent) {
		msg.Sent = m.lastSent.Add(time.Nanosecond)
	}
	m.lastSent = msg.Sent
}

// idRE is compiled on first use: a counted repetition compiles to a program of thousands
// of instructions, which every keel process paid at start (most never check an id).
var idRE = lazy.Regexp{Expr: `^[A-Za-z0-9_=-][A-Za-z0-9_=-]{0,127}$`}

// checkID reports an id that cannot be part of a key.
func checkID(what, id string) error {
	if !idRE.Get().MatchString(id) {
		return fmt.Errorf("%s: id %q: want 1-128 letters, digits and _ = -: %w", what, id, coord.ErrInvalid)
	}
	return nil
}

func doneKey(member, id string) string { return "done." + member + "." + id }

func (m *mailbox) Send(ctx context.Context, msg coord.Message) error {
	if err := m.b.live(ctx, "send message"); err != nil {
		return err
	}
	if err := msg.Check(m.b.cfg.Limits); err != nil {
		return err
	}
	if err := checkID("send message", msg.ID); err != nil {
		return err
	}
	m.stamp(&msg)
	data, err := json.Marshal(msg)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	what := "send message to " + msg.To
	return m.b.retry(ctx, what, func(ctx context.Context) error {
		for {
			held, last, err := m.refresh(ctx, msg.To)
			if err != nil && !errors.Is(err, coord.ErrCorrupt) {
				return fmt.Errorf("%s: read the inbox: %w", what, err)
			}
			if slices.ContainsFunc(held, func(s stored) bool { return s.msg.ID == msg.ID }) {
				return nil // a retry: the inbox has it
			}
			// Acks record delivery before they remove the message, so a message that is not
			// in the inbox any more is found here.
			if _, err := m.b.stateKV.Get(ctx, doneKey(msg.To, msg.ID)); err == nil {
				return nil // delivered already
			} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
				return fmt.Errorf("%s: %w", what, err)
			}
			size := 0
			for _, s := range held {
				size += s.size
			}
			lim := m.b.cfg.Limits
			if len(held)+1 > lim.InboxMessages || int64(size+len(data)) > lim.InboxBytes {
				return fmt.Errorf("%s: the inbox holds %d unread messages (%d bytes), its budget is %d messages or %d bytes; %s must read its messages before more can be delivered: %w",
					what, len(held), size, lim.InboxMessages, lim.InboxBytes, msg.To, coord.ErrInboxFull)
			}
			_, err = m.b.js.PublishMsg(ctx, &nats.Msg{Subject: m.b.mailSubject(msg.To), Data: data},
				jetstream.WithMsgID(msg.ID), jetstream.WithExpectStream(m.b.mailStr.CachedInfo().Config.Name),
				jetstream.WithExpectLastSequencePerSubject(last))
			if wrongLastSeq(err) {
				continue // another message arrived since the inbox was read: check again
			}
			if err != nil {
				return err
			}
			return nil
		}
	})
}

func (m *mailbox) Fetch(ctx context.Context, member string, max int) ([]coord.Message, error) {
	if err := m.b.live(ctx, "fetch messages"); err != nil {
		return nil, err
	}
	if err := coord.CheckName(member); err != nil {
		return nil, fmt.Errorf("fetch messages: %w", err)
	}
	var held []stored
	var corrupt error
	err := m.b.retry(ctx, "fetch messages of "+member, func(ctx context.Context) error {
		var err error
		held, _, err = m.refresh(ctx, member)
		if errors.Is(err, coord.ErrCorrupt) {
			corrupt, err = err, nil
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fetch messages of %s: %w", member, err)
	}
	msgs := sortedMessages(held)
	if max > 0 && len(msgs) > max {
		msgs = msgs[:max]
	}
	return msgs, corrupt
}

// sortedMessages orders an inbox by send time, then arrival.
func sortedMessages(held []stored) []coord.Message {
	slices.SortStableFunc(held, func(a, b stored) int {
		return cmp.Or(a.msg.Sent.Compare(b.msg.Sent), cmp.Compare(a.seq, b.seq))
	})
	out := make([]coord.Message, 0, len(held))
	for _, s := range held {
		out = append(out, s.msg)
	}
	return out
}

func (m *mailbox) Ack(ctx context.Context, member string, ids ...string) error {
	if err := m.b.live(ctx, "ack messages"); err != nil {
		return err
	}
	if err := coord.CheckName(member); err != nil {
		return fmt.Errorf("ack messages: %w", err)
	}
	if len(ids) == 0 {
		return nil
	}
	what := "ack messages of " + member
	return m.b.retry(ctx, what, func(ctx context.Context) error {
		// The usual ack follows this handle's own Fetch: the messages are known, with their
		// sequences, and need no read. Others are looked up.
		held, ok := m.cached(member, ids)
		if !ok {
			var err error
			held, _, err = m.refresh(ctx, member)
			if err != nil && !errors.Is(err, coord.ErrCorrupt) {
				return fmt.Errorf("%s: %w", what, err)
			}
		}
		var acked []uint64
		for _, s := range held {
			if !slices.Contains(ids, s.msg.ID) {
				continue
			}
			data, err := json.Marshal(s.msg)
			if err != nil {
				return fmt.Errorf("encode message %s: %w", s.msg.ID, err)
			}
			// First remember it as delivered, then remove it: a resend between the two finds
			// it in one place or the other.
			_, err = m.b.stateKV.Create(ctx, doneKey(member, s.msg.ID), data, jetstream.KeyTTL(deliveredTTL))
			if err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
				return fmt.Errorf("%s: record %s as delivered: %w", what, s.msg.ID, err)
			}
			if err := m.b.mailStr.DeleteMsg(ctx, s.seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) && !notFound(err) {
				return fmt.Errorf("%s: remove %s from the inbox: %w", what, s.msg.ID, err)
			}
			acked = append(acked, s.seq)
		}
		m.forget(member, acked)
		return nil
	})
}

// cached returns the remembered messages with the given ids, and whether all were there.
func (m *mailbox) cached(member string, ids []string) ([]stored, bool) {
	in := m.inbox(member)
	in.mu.Lock()
	defer in.mu.Unlock()
	var out []stored
	for _, s := range in.msgs {
		if slices.Contains(ids, s.msg.ID) {
			out = append(out, s)
		}
	}
	return out, len(out) == len(ids)
}

// notFound reports a delete of a message that is already gone.
func notFound(err error) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) && (api.Code == 404 || strings.Contains(api.Description, "not found"))
}

// forget drops acked messages from this handle's copy of the inbox.
func (m *mailbox) forget(member string, seqs []uint64) {
	if len(seqs) == 0 {
		return
	}
	in := m.inbox(member)
	in.mu.Lock()
	defer in.mu.Unlock()
	in.msgs = slices.DeleteFunc(in.msgs, func(s stored) bool { return slices.Contains(seqs, s.seq) })
}

func (m *mailbox) Watch(ctx context.Context, member string) (<-chan struct{}, error) {
	if err := coord.CheckName(member); err != nil {
		return nil, fmt.Errorf("watch inbox: %w", err)
	}
	return m.b.watch(ctx, "watch the inbox of "+member, func(ctx context.Context, sig *signal) (func(), error) {
		// An ordered consumer of the inbox's subject from now on: it resumes by itself after a
		// reconnect or a leader change. It only wakes; the messages are read by Fetch.
		cons, err := m.b.mailStr.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{m.b.mailSubject(member)},
			DeliverPolicy:  jetstream.DeliverNewPolicy,
		})
		if err != nil {
			return nil, err
		}
		cc, err := cons.Consume(func(jetstream.Msg) { sig.notify() })
		if err != nil {
			return nil, err
		}
		return cc.Stop, nil
	})
}

// Delivered returns the messages member acked in the last week, oldest first.
func (m *mailbox) Delivered(ctx context.Context, member string, limit int) ([]coord.Message, error) {
	if err := m.b.live(ctx, "read delivered messages"); err != nil {
		return nil, err
	}
	if err := coord.CheckName(member); err != nil {
		return nil, fmt.Errorf("read delivered messages: %w", err)
	}
	var msgs []coord.Message
	err := m.b.retry(ctx, "read delivered messages of "+member, func(ctx context.Context) error {
		msgs = nil
		return eachValue(ctx, m.b, "done."+member+".*", func(e jetstream.KeyValueEntry) {
			var msg coord.Message
			if json.Unmarshal(e.Value(), &msg) == nil {
				msgs = append(msgs, msg)
			}
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read delivered messages of %s: %w", member, err)
	}
	slices.SortStableFunc(msgs, func(a, b coord.Message) int { return a.Sent.Compare(b.Sent) })
	if limit > 0 && len(msgs) > limit {
		msgs = msgs[len(msgs)-limit:]
	}
	return msgs, nil
}

// eachValue calls fn with the current value of every key of the state bucket matching
// filter (a KV key pattern). The keys come from the stream's own per-subject state, then each
// value is read: a KV watch's initial listing can end early while keys are being written
// (heartbeats are), and a listing must never leave out a key that exists.
func eachValue(ctx context.Context, b *Backend, filter string, fn func(jetstream.KeyValueEntry)) error {
	prefix := "$KV." + b.stateKV.Bucket() + "."
	info, err := b.stateStr.Info(ctx, jetstream.WithSubjectFilter(prefix+filter))
	if err != nil {
		return err
	}
	keys := make([]string, 0, len(info.State.Subjects))
	for subj := range info.State.Subjects {
		keys = append(keys, strings.TrimPrefix(subj, prefix))
	}
	slices.Sort(keys)
	for _, key := range keys {
		e, err := b.stateKV.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // deleted (its marker is a message of the subject)
		}
		if err != nil {
			return err
		}
		fn(e)
	}
	return nil
}
