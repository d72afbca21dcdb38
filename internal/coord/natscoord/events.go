package natscoord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/keel-dev/keel/internal/coord"
)

// Event logs: one stream per team, keel-<team>-events, a subject per member
// (keel.<team>.events.<member>). The stream keeps the newest [coord.Limits.EventEntries]
// messages of each subject (discarding the oldest) for at most a week; an entry's sequence
// is its stream sequence, which grows along every subject. Publishes carry a message id, so
// one retried after a lost connection is stored once.

// eventsMaxAge is how long a log's entries are kept at most: a member long gone leaves
// nothing behind.
const eventsMaxAge = 7 * 24 * time.Hour

type events struct{ b *Backend }

var _ coord.Events = events{}

// Events returns the team's event logs.
func (b *Backend) Events() coord.Events { return events{b} }

func (b *Backend) eventSubject(member string) string { return "keel." + b.team + ".events." + member }

func (b *Backend) eventStream(ctx context.Context, replicas int) (jetstream.Stream, error) {
	return b.ensureStream(ctx, jetstream.StreamConfig{
		Name:              fmt.Sprintf("keel-%s-events", b.team),
		Description:       fmt.Sprintf("keel team %s: members' event logs", b.team),
		Subjects:          []string{b.eventSubject("*")},
		Storage:           jetstream.FileStorage,
		Replicas:          replicas,
		Retention:         jetstream.LimitsPolicy,
		Discard:           jetstream.DiscardOld,
		MaxMsgsPerSubject: int64(b.cfg.Limits.EventEntries),
		MaxAge:            eventsMaxAge,
		Duplicates:        2 * time.Minute,
	})
}

func (e events) Append(ctx context.Context, member string, data ...json.RawMessage) error {
	b := e.b
	if err := b.live(ctx, "append events"); err != nil {
		return err
	}
	if err := coord.CheckEntries(member, data, b.cfg.Limits); err != nil {
		return err
	}
	now := b.cfg.Now()
	what := "append events of " + member
	for _, d := range data {
		payload, err := json.Marshal(coord.Entry{Time: now, Data: d})
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		id := coord.NewID()
		err = b.retry(ctx, what, func(ctx context.Context) error {
			_, err := b.js.PublishMsg(ctx, &nats.Msg{Subject: b.eventSubject(member), Data: payload}, jetstream.WithMsgID(id))
			return err
		})
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	return nil
}

func (e events) Read(ctx context.Context, member string, after uint64, limit int) ([]coord.Entry, error) {
	b := e.b
	if err := b.live(ctx, "read events"); err != nil {
		return nil, err
	}
	if err := coord.CheckName(member); err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	subj := b.eventSubject(member)
	var out []coord.Entry
	seq := after + 1
	for limit <= 0 || len(out) < limit {
		var raw *jetstream.RawStreamMsg
		err := b.retry(ctx, "read events of "+member, func(ctx context.Context) error {
			var err error
			raw, err = b.eventStr.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subj))
			return err
		})
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read events of %s: %w", member, err)
		}
		seq = raw.Sequence + 1
		var en coord.Entry
		if json.Unmarshal(raw.Data, &en) != nil {
			continue // not an entry keel wrote: nothing to show
		}
		en.Seq = raw.Sequence
		out = append(out, en)
	}
	return out, nil
}

func (e events) Last(ctx context.Context, member string) (uint64, error) {
	b := e.b
	if err := b.live(ctx, "read events"); err != nil {
		return 0, err
	}
	if err := coord.CheckName(member); err != nil {
		return 0, fmt.Errorf("read events: %w", err)
	}
	var seq uint64
	err := b.retry(ctx, "read the last event of "+member, func(ctx context.Context) error {
		raw, err := b.eventStr.GetLastMsgForSubject(ctx, b.eventSubject(member))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			seq = 0
			return nil
		}
		if err != nil {
			return err
		}
		seq = raw.Sequence
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("read the last event of %s: %w", member, err)
	}
	return seq, nil
}

func (e events) Watch(ctx context.Context, member string) (<-chan struct{}, error) {
	b := e.b
	if err := coord.CheckName(member); err != nil {
		return nil, fmt.Errorf("watch events: %w", err)
	}
	return b.watch(ctx, "watch the events of "+member, func(ctx context.Context, sig *signal) (func(), error) {
		cons, err := b.eventStr.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{b.eventSubject(member)},
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
