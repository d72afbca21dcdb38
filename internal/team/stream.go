package team

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/message"
)

// Events of members that run outside their lead's process — `keel team worker` processes,
// `keel worker` on other hosts — reach the lead through the backend's event log of the member
// ([coord.Events]): the worker's handle publishes what its session emits ([Team.Publish]) into
// its member's log, and the lead's handle follows the logs of the members it does not run and
// emits their events as if they were local, so its UI and stream-json show their work. Streamed
// text and thinking deltas stay home (the complete message that follows carries them).

// pubQueue bounds the events waiting to be written to the log; when the backend is slower
// than the member, the excess is counted and reported in the log instead of held.
const pubQueue = 1024

// publisher writes one member's events to its log, in order, off the member's goroutines.
type publisher struct {
	t      *Team
	ev     coord.Events
	member string
	ch     chan event.Event

	// mu guards dropped.
	mu      sync.Mutex
	dropped int
}

// startPublishing makes this (non-lead) handle publish its session's events as member's.
func (t *Team) startPublishing(member string) {
	el, ok := t.be.(coord.EventLog)
	if !ok || t.cfg.Lead {
		return
	}
	p := &publisher{t: t, ev: el.Events(), member: member, ch: make(chan event.Event, pubQueue)}
	t.mu.Lock()
	if t.pub != nil || t.closed {
		t.mu.Unlock()
		return
	}
	t.pub = p
	t.mu.Unlock()
	t.wg.Go(p.run)
}

// Publish streams e, an event of this worker process's session, to the lead through the log
// of the member this process runs; it never blocks. Other handles ignore it.
func (t *Team) Publish(e event.Event) {
	t.mu.Lock()
	p := t.pub
	t.mu.Unlock()
	if p == nil {
		return
	}
	switch e.(type) {
	case event.TextDelta, event.ThinkingDelta:
		return
	}
	select {
	case p.ch <- e:
	default:
		p.mu.Lock()
		p.dropped++
		p.mu.Unlock()
	}
}

// pubBatch is how many events one append carries at most.
const pubBatch = 64

func (p *publisher) run() {
	// Writes outlive the session's end by a little: what is queued when it ends (its last
	// state, above all) still goes out, but a backend that does not answer does not hold the
	// exit up for long.
	ctx, cancel := context.WithCancel(context.WithoutCancel(p.t.ctx))
	defer cancel()
	stop := context.AfterFunc(p.t.ctx, func() { time.AfterFunc(5*time.Second, cancel) })
	defer stop()
	for {
		select {
		case e := <-p.ch:
			p.write(ctx, p.batch(e))
		case <-p.t.ctx.Done():
			for {
				select {
				case e := <-p.ch:
					p.write(ctx, p.batch(e))
				default:
					return
				}
			}
		}
	}
}

// batch takes first and whatever else is queued, up to pubBatch events.
func (p *publisher) batch(first event.Event) []event.Event {
	out := []event.Event{first}
	for len(out) < pubBatch {
		select {
		case e := <-p.ch:
			out = append(out, e)
		default:
			return out
		}
	}
	return out
}

func (p *publisher) write(ctx context.Context, evs []event.Event) {
	p.mu.Lock()
	dropped := p.dropped
	p.dropped = 0
	p.mu.Unlock()
	if dropped > 0 {
		evs = append([]event.Event{event.Notice{Origin: evs[0].From(), Level: "warn",
			Text: fmt.Sprintf("%s: %d events were not streamed to the lead (the coordination backend fell behind)", p.member, dropped)}}, evs...)
	}
	var data []json.RawMessage
	for _, e := range evs {
		b, err := encodeWithin(e, coord.DefaultLimits.MessageBytes)
		if err != nil {
			p.t.logger.Debug("stream event", "member", p.member, "err", err)
			continue
		}
		data = append(data, b)
	}
	err := p.ev.Append(ctx, p.member, data...)
	if errors.Is(err, coord.ErrTooLarge) {
		// A backend with a smaller budget: what fits goes, one at a time.
		for _, d := range data {
			if err = p.ev.Append(ctx, p.member, d); err != nil && !errors.Is(err, coord.ErrTooLarge) {
				break
			}
		}
	}
	if err != nil && ctx.Err() == nil {
		p.t.logger.Warn("stream events to the lead", "member", p.member, "events", len(data), "err", err)
	}
}

// encodeWithin encodes e, cutting long texts (tool results, replies) to fit limit bytes; an
// event that still does not fit becomes a notice saying what was left out.
func encodeWithin(e event.Event, limit int) (json.RawMessage, error) {
	b, err := event.Encode(e)
	if err != nil || len(b) <= limit {
		return b, err
	}
	for _, keep := range []int{limit / 8, limit / 64, 256} {
		if b, err = event.Encode(shortened(e, keep)); err == nil && len(b) <= limit {
			return b, nil
		}
	}
	return event.Encode(event.Notice{Origin: e.From(), Level: "info", Text: fmt.Sprintf("(a %T of %d bytes is not shown here)", e, len(b))})
}

// shortened cuts the texts of e's messages to keep bytes each.
func shortened(e event.Event, keep int) event.Event {
	switch v := e.(type) {
	case event.AssistantMessage:
		v.Message = shortMessage(v.Message, keep)
		return v
	case event.UserMessage:
		v.Message = shortMessage(v.Message, keep)
		return v
	case event.ToolEnd:
		v.Result = shortBlocks(v.Result, keep)
		return v
	case event.ToolStart:
		if len(v.Input) > keep {
			v.Input, _ = json.Marshal(map[string]string{"note": fmt.Sprintf("input of %d bytes not shown", len(v.Input))})
		}
		return v
	case event.Notice:
		v.Text = cut(v.Text, keep)
		return v
	case event.TeamMessage:
		v.Text = cut(v.Text, keep)
		return v
	}
	return e
}

func shortMessage(m message.Message, keep int) message.Message {
	m.Content = shortBlocks(m.Content, keep)
	return m
}

func shortBlocks(bs []message.Block, keep int) []message.Block {
	out := make([]message.Block, len(bs))
	for i, b := range bs {
		b.Text, b.Thinking = cut(b.Text, keep), cut(b.Thinking, keep)
		if len(b.Input) > keep {
			b.Input, _ = json.Marshal(map[string]string{"note": fmt.Sprintf("input of %d bytes not shown", len(b.Input))})
		}
		if b.Source != nil {
			b = message.Text("[image not shown]")
		}
		b.Raw, b.Signature, b.Data = nil, "", ""
		b.Content = shortBlocks(b.Content, keep)
		out[i] = b
	}
	return out
}

func cut(s string, keep int) string {
	if len(s) <= keep {
		return s
	}
	return s[:keep] + fmt.Sprintf("… (%d more bytes)", len(s)-keep)
}

// followFrom returns where the lead starts following the logs of the members the team has
// when it opens: after their newest entry, since what they did before is history.
func (t *Team) followFrom(ctx context.Context) map[string]uint64 {
	el, ok := t.be.(coord.EventLog)
	if !ok {
		return nil
	}
	from := map[string]uint64{}
	recs, _ := t.records(ctx)
	for _, r := range recs {
		if r.Name == LeadAlias {
			continue
		}
		last, err := el.Events().Last(ctx, r.Name)
		if err != nil {
			t.logger.Warn("follow teammate's events", "member", r.Name, "err", err)
		}
		from[r.Name] = last
	}
	return from
}

// follow runs in the lead's handle: it follows the event log of every member this process
// does not run and emits their events. Members the team had when the lead opened are
// followed from where [Team.followFrom] found their logs; those that appear later from the
// start of their log, but for what was written before the lead opened (a resumed teammate's
// earlier life).
func (t *Team) follow(from map[string]uint64) {
	el, ok := t.be.(coord.EventLog)
	if !ok {
		return
	}
	ev := el.Events()
	ctx := t.ctx
	watch, err := t.be.Records().Watch(ctx, "members/")
	if err != nil {
		t.logger.Warn("follow teammates' events", "err", err)
		return
	}
	// A member that dies says nothing: the lead tells its UI when it sees one dead.
	tick := time.NewTicker(t.heartbeatEvery())
	defer tick.Stop()
	followed := map[string]bool{}
	dead := map[string]bool{}
	for {
		recs, _ := t.records(ctx)
		for _, r := range recs {
			if r.Name == LeadAlias {
				continue
			}
			if !followed[r.Name] {
				followed[r.Name] = true
				after := from[r.Name]
				t.wg.Go(func() { t.followMember(ctx, ev, r.Name, after) })
			}
			isDead := !t.runsHere(r.Name) && t.liveness(r) == StateDead
			if isDead && !dead[r.Name] {
				t.emit(event.TeammateState{Origin: event.Origin{AgentID: r.ID, AgentName: r.Name}, Name: r.Name, Color: r.Color,
					State: string(StateDead), Task: r.Task})
			}
			dead[r.Name] = isDead
		}
		select {
		case <-ctx.Done():
			return
		case <-watch:
		case <-tick.C:
		}
	}
}

// followBatch is how many entries one read of a log takes.
const followBatch = 256

func (t *Team) followMember(ctx context.Context, ev coord.Events, name string, after uint64) {
	watch, err := ev.Watch(ctx, name)
	if err != nil {
		if ctx.Err() == nil {
			t.logger.Warn("follow teammate's events", "member", name, "err", err)
		}
		return
	}
	for {
		es, err := ev.Read(ctx, name, after, followBatch)
		if err != nil && ctx.Err() == nil {
			t.logger.Warn("read teammate's events", "member", name, "err", err)
		}
		for _, en := range es {
			after = en.Seq
			if en.Time.Before(t.opened) || t.runsHere(name) {
				continue
			}
			e, err := event.Decode(en.Data)
			if err != nil {
				t.logger.Debug("teammate's event", "member", name, "err", err)
				continue
			}
			t.emit(e)
		}
		if len(es) == followBatch {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case _, ok := <-watch:
			if !ok {
				return
			}
		}
	}
}

// runsHere says whether this process runs member name (its events are this process's own).
func (t *Team) runsHere(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.members[name] != nil
}
