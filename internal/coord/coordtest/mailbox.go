package coordtest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/coord"
)

func msg(from, to, text string) coord.Message {
	return coord.Message{ID: coord.NewID(), From: from, To: to, Text: text}
}

func texts(ms []coord.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Text)
	}
	return out
}

func send(t *testing.T, mb coord.Mailbox, m coord.Message) {
	t.Helper()
	if err := mb.Send(ctxOf(t), m); err != nil {
		t.Fatalf("send %q: %v", m.Text, err)
	}
}

func fetch(t *testing.T, mb coord.Mailbox, member string) []coord.Message {
	t.Helper()
	return must[[]coord.Message](t, "fetch "+member)(mb.Fetch(ctxOf(t), member, 0))
}

func testMailOrderAck(t *testing.T, s *store) {
	ctx := ctxOf(t)
	sender, receiver := s.handle(t).Mailbox(), s.handle(t).Mailbox()
	var want []string
	for i := range 25 {
		text := fmt.Sprintf("m%02d", i)
		send(t, sender, msg("alice", "bob", text))
		want = append(want, text)
	}
	got := fetch(t, receiver, "bob")
	if diff := cmp.Diff(want, texts(got)); diff != "" {
		t.Fatalf("one sender's messages out of order (-want +got):\n%s", diff)
	}
	if got[0].From != "alice" || got[0].To != "bob" || got[0].Sent.IsZero() || got[0].ID == "" {
		t.Errorf("fetched message lost its fields: %+v", got[0])
	}
	first := must[[]coord.Message](t, "fetch 5")(receiver.Fetch(ctx, "bob", 5))
	if diff := cmp.Diff(want[:5], texts(first)); diff != "" {
		t.Errorf("fetch with max mismatch (-want +got):\n%s", diff)
	}
	if err := receiver.Ack(ctx, "bob", first[0].ID, first[1].ID); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want[2:], texts(fetch(t, sender, "bob"))); diff != "" {
		t.Errorf("after ack mismatch (-want +got):\n%s", diff)
	}
	// Acking again, or an id never sent, is harmless.
	if err := receiver.Ack(ctx, "bob", first[0].ID, "no-such-id"); err != nil {
		t.Errorf("repeated ack: %v", err)
	}
	if other := fetch(t, receiver, "carol"); len(other) != 0 {
		t.Errorf("carol's inbox holds bob's mail: %v", texts(other))
	}
	// Across senders, a later message (by the clock) comes later.
	s.clock.Advance(time.Second)
	send(t, s.handle(t).Mailbox(), msg("carol", "dave", "early"))
	s.clock.Advance(time.Second)
	send(t, sender, msg("alice", "dave", "late"))
	if diff := cmp.Diff([]string{"early", "late"}, texts(fetch(t, receiver, "dave"))); diff != "" {
		t.Errorf("two senders' order mismatch (-want +got):\n%s", diff)
	}
}

func testMailRedelivery(t *testing.T, s *store) {
	sender := s.handle(t).Mailbox()
	send(t, sender, msg("lead", "w", "one"))
	send(t, sender, msg("lead", "w", "two"))
	crashed := s.open(t, cleanCfg(s))
	got := fetch(t, crashed.Mailbox(), "w")
	if len(got) != 2 {
		t.Fatalf("fetched %v", texts(got))
	}
	// The receiver dies before it acks: the next process gets the same messages again.
	_ = crashed.Close()
	again := fetch(t, s.handle(t).Mailbox(), "w")
	if diff := cmp.Diff(got, again); diff != "" {
		t.Errorf("redelivery after a crash mismatch (-want +got):\n%s", diff)
	}
	// A fetch without ack in the same process returns them again too.
	if n := len(fetch(t, sender, "w")); n != 2 {
		t.Errorf("second fetch returned %d messages, want the 2 unacked", n)
	}
}

func cleanCfg(s *store) coord.Config { return coord.Config{Now: s.clock.Now} }

func testMailDedup(t *testing.T, s *store) {
	ctx := ctxOf(t)
	a, b := s.handle(t).Mailbox(), s.handle(t).Mailbox()
	m := msg("alice", "bob", "only once")
	send(t, a, m)
	send(t, b, m) // a retry from another process
	got := fetch(t, a, "bob")
	if len(got) != 1 {
		t.Fatalf("a message sent twice with one id arrived %d times", len(got))
	}
	if err := a.Ack(ctx, "bob", m.ID); err != nil {
		t.Fatal(err)
	}
	send(t, b, m) // a late retry after delivery
	if got := fetch(t, b, "bob"); len(got) != 0 {
		t.Errorf("a message resent after it was acked came back: %v", texts(got))
	}
	// Concurrent duplicates: one copy.
	dup := msg("alice", "carol", "racing")
	var wg sync.WaitGroup
	for range 8 {
		mb := s.handle(t).Mailbox()
		wg.Go(func() {
			if err := mb.Send(ctx, dup); err != nil {
				t.Errorf("send duplicate: %v", err)
			}
		})
	}
	wg.Wait()
	if got := fetch(t, a, "carol"); len(got) != 1 {
		t.Errorf("8 concurrent sends of one id left %d copies", len(got))
	}
}

func testMailBudgets(t *testing.T, s *store) {
	ctx := ctxOf(t)
	limits := coord.Limits{MessageBytes: 2000, InboxBytes: 6000, InboxMessages: 4}
	mb := s.handleWith(t, coord.Config{Limits: limits}).Mailbox()
	big := msg("alice", "bob", strings.Repeat("x", 2100))
	err := mb.Send(ctx, big)
	wantErr(t, "oversize message", err, coord.ErrTooLarge)
	if !strings.Contains(err.Error(), "2000") {
		t.Errorf("oversize error does not state the budget: %v", err)
	}
	if got := fetch(t, mb, "bob"); len(got) != 0 {
		t.Fatalf("a refused message was stored: %d", len(got))
	}
	// The inbox budget in bytes: three messages of about 1850 bytes fit under 6000, the
	// fourth does not (the count budget of 4 would still allow it).
	accepted := 0
	for {
		err := mb.Send(ctx, msg("alice", "bob", strings.Repeat("y", 1700)))
		if err != nil {
			wantErr(t, "inbox over its byte budget", err, coord.ErrInboxFull)
			break
		}
		if accepted++; accepted > 3 {
			t.Fatalf("the inbox accepted %d messages of 1700 bytes under a 6000-byte budget", accepted)
		}
	}
	if accepted != 3 {
		t.Errorf("the inbox accepted %d messages of 1700 bytes, want 3 under a 6000-byte budget", accepted)
	}
	inbox := fetch(t, mb, "bob")
	var total int
	for _, m := range inbox {
		total += m.Size()
	}
	if int64(total) > limits.InboxBytes {
		t.Errorf("inbox holds %d bytes, over its budget of %d", total, limits.InboxBytes)
	}
	// Reading frees room.
	if err := mb.Ack(ctx, "bob", inbox[0].ID); err != nil {
		t.Fatal(err)
	}
	send(t, mb, msg("alice", "bob", strings.Repeat("z", 1700)))
	// The count budget: four small messages fit, the fifth does not.
	for i := range 4 {
		send(t, mb, msg("alice", "carol", fmt.Sprint(i)))
	}
	wantErr(t, "inbox over its count budget", mb.Send(ctx, msg("alice", "carol", "5th")), coord.ErrInboxFull)
	if got := fetch(t, mb, "carol"); len(got) != 4 {
		t.Errorf("carol's inbox holds %d, want 4", len(got))
	}
}

func testMailConcurrent(t *testing.T, s *store) {
	const senders, each = 8, 25
	var wg sync.WaitGroup
	for i := range senders {
		mb := s.handle(t).Mailbox()
		wg.Go(func() {
			for j := range each {
				if err := mb.Send(ctxOf(t), msg(fmt.Sprintf("s%d", i), "sink", fmt.Sprintf("s%d-%03d", i, j))); err != nil {
					t.Errorf("send: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	got := fetch(t, s.handle(t).Mailbox(), "sink")
	if len(got) != senders*each {
		t.Fatalf("%d of %d messages arrived", len(got), senders*each)
	}
	// Each sender's messages keep their order.
	last := map[string]string{}
	for _, m := range got {
		if prev, ok := last[m.From]; ok && m.Text < prev {
			t.Errorf("%s's messages out of order: %s after %s", m.From, m.Text, prev)
		}
		last[m.From] = m.Text
	}
}

func testMailWatch(t *testing.T, s *store) {
	ctx := ctxOf(t)
	receiver, sender := s.handle(t).Mailbox(), s.handle(t).Mailbox()
	ch, err := receiver.Watch(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		text := fmt.Sprint("wake ", round)
		waitFor(t, ch, "mail to arrive", func() bool {
			got := must[[]coord.Message](t, "fetch")(receiver.Fetch(ctx, "bob", 0))
			if len(got) == 1 && got[0].Text == text {
				return receiver.Ack(ctx, "bob", got[0].ID) == nil
			}
			return false
		}, func() { send(t, sender, msg("alice", "bob", text)) })
	}
}

func testMailInvalid(t *testing.T, s *store) {
	ctx := ctxOf(t)
	mb := s.handle(t).Mailbox()
	wantErr(t, "message without id", mb.Send(ctx, coord.Message{To: "bob", Text: "x"}), coord.ErrInvalid)
	wantErr(t, "message without recipient", mb.Send(ctx, coord.Message{ID: coord.NewID(), Text: "x"}), coord.ErrInvalid)
	err := mb.Send(ctx, coord.Message{ID: coord.NewID(), To: "../etc", Text: "x"})
	wantErr(t, "recipient that is not a name", err, coord.ErrInvalid)
	_, err = mb.Fetch(ctx, "a/b", 0)
	if !errors.Is(err, coord.ErrInvalid) {
		t.Errorf("fetch of a bad name: %v", err)
	}
}
