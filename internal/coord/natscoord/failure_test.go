package natscoord_test

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/natscoord"
	"github.com/keel-dev/keel/internal/coord/natscoord/natstest"
	"github.com/keel-dev/keel/internal/waittest"
)

func open(t *testing.T, opts natscoord.Options) *natscoord.Backend {
	t.Helper()
	if opts.Team == "" {
		opts.Team = "team"
	}
	b, err := natscoord.Open(waittest.Context(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func ptr[T any](v T) *T { return &v }

// NATS unreachable at start: an error that names the server (without its password), at
// once, and no other backend in its place.
func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	ctx := waittest.Context(t)
	b, err := natscoord.Open(ctx, natscoord.Options{URL: "nats://keel:s3cret@" + addr, Team: "x"})
	if err == nil {
		_ = b.Close()
		t.Fatal("open succeeded with no server listening")
	}
	if !strings.Contains(err.Error(), "nats://keel:REDACTED@"+addr) || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error %q should name the server, without the password", err)
	}
	if !errors.Is(err, nats.ErrNoServers) {
		t.Errorf("error %v does not say no server could be reached", err)
	}
	_, err = natscoord.Open(ctx, natscoord.Options{Team: "x"})
	if err == nil || !strings.Contains(err.Error(), "KEEL_NATS_URL") {
		t.Errorf("open without a URL: %v; want an error saying where to set it", err)
	}
}

// The server goes away mid-session and comes back: the handle reconnects by itself, tells
// its state, a send made during the outage lands once, what was stored before is all still
// there, and watches wake so that readers look again.
func TestReconnect(t *testing.T) {
	ctx := waittest.Context(t)
	srv := natstest.StartRestartable(t)
	states := make(chan natscoord.State, 64)
	sender := open(t, natscoord.Options{URL: srv.URL(), OnState: func(s natscoord.State) { states <- s }})
	receiver := open(t, natscoord.Options{URL: srv.URL()})
	mb := sender.Mailbox()
	var want []string
	for i := range 3 {
		text := fmt.Sprint("before ", i)
		want = append(want, text)
		if err := mb.Send(ctx, coord.Message{ID: coord.NewID(), From: "lead", To: "bob", Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sender.Board().Create(ctx, coord.Task{Subject: "survives"}); err != nil {
		t.Fatal(err)
	}
	// The watch lives as long as the test; each step has its own time limit (the outage and the
	// reconnect take longer than one on a loaded machine, and a send or claim issued late was
	// ended by the limit of the test's start).
	wake, err := receiver.Mailbox().Watch(t.Context(), "bob")
	if err != nil {
		t.Fatal(err)
	}

	srv.Stop()
	if s := waittest.Recv(t, "the handle to notice the outage", states); s.Connected {
		t.Fatalf("first state after the server stopped: %+v", s)
	}
	during := coord.Message{ID: coord.NewID(), From: "lead", To: "bob", Text: "during"}
	want = append(want, during.Text)
	sent := make(chan error, 1)
	sendCtx, claimCtx := waittest.Context(t), waittest.Context(t)
	go func() { sent <- mb.Send(sendCtx, during) }()
	claimed := make(chan error, 1)
	go func() {
		_, err := receiver.Board().ClaimNext(claimCtx, "bob", time.Minute)
		claimed <- err
	}()
	// Drain the signals the receiver's watch gave before and at the outage.
	for len(wake) > 0 {
		<-wake
	}
	srv.Start()
	waittest.Until(t, "the handle to say it is connected again", func() bool {
		select {
		case s := <-states:
			return s.Connected
		default:
			return false
		}
	})
	if err := waittest.Recv(t, "the send made during the outage", sent); err != nil {
		t.Fatalf("send during the outage: %v", err)
	}
	if err := waittest.Recv(t, "the claim made during the outage", claimed); err != nil {
		t.Fatalf("claim during the outage: %v", err)
	}
	waittest.Recv(t, "the watch to wake after the reconnect", wake)
	ctx = waittest.Context(t)
	got, err := receiver.Mailbox().Fetch(ctx, "bob", 0)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range got {
		texts = append(texts, m.Text)
	}
	if diff := cmp.Diff(want, texts); diff != "" {
		t.Errorf("inbox after the outage (nothing lost, nothing doubled) mismatch (-want +got):\n%s", diff)
	}
	if tk, err := sender.Board().Get(ctx, "1"); err != nil || tk.Owner != "bob" {
		t.Errorf("task after the outage: %+v, %v", tk, err)
	}
}

// The server drops a second publish of one message id by itself (Nats-Msg-Id), so a sender
// that retries a publish whose acknowledgement it lost stores the message once; and a
// message resent after it was delivered is dropped too.
func TestDuplicatePublishStoredOnce(t *testing.T) {
	ctx := waittest.Context(t)
	srv := natstest.Start(t)
	b := open(t, natscoord.Options{URL: srv.URL(), Team: "dup"})
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	m := coord.Message{ID: coord.NewID(), From: "lead", To: "w", Text: "once", Sent: time.Now()}
	if err := b.Mailbox().Send(ctx, m); err != nil {
		t.Fatal(err)
	}
	// The raw retry of a sender that never saw its ack, bypassing keel's own checks.
	ack, err := js.Publish(ctx, "keel.dup.mail.w", []byte(`{"id":"`+m.ID+`","to":"w","text":"once"}`), jetstream.WithMsgID(m.ID))
	if err != nil {
		t.Fatal(err)
	}
	if !ack.Duplicate {
		t.Errorf("the server stored a second publish of message id %s", m.ID)
	}
	got, err := b.Mailbox().Fetch(ctx, "w", 0)
	if err != nil || len(got) != 1 {
		t.Fatalf("fetch: %d messages, %v; want the one", len(got), err)
	}
	if err := b.Mailbox().Ack(ctx, "w", m.ID); err != nil {
		t.Fatal(err)
	}
	if err := b.Mailbox().Send(ctx, m); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.Mailbox().Fetch(ctx, "w", 0); len(got) != 0 {
		t.Errorf("a message resent after delivery came back: %v", got)
	}
	hist, err := b.Mailbox().(coord.MailLog).Delivered(ctx, "w", 0)
	if err != nil || len(hist) != 1 || hist[0].ID != m.ID {
		t.Errorf("delivered history: %v, %v; want the one message", hist, err)
	}
}

// A node of a three-node cluster dies (the one the lead is connected to): claims, completions
// and deliveries carry on through the other two, with no task claimed twice and no message
// lost or doubled.
func TestClusterNodeKilled(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	opts := natscoord.Options{URL: c.URL(), Team: "ha", Replicas: 3}
	lead, worker := open(t, opts), open(t, opts)
	const tasks, msgs = 20, 20
	// Each step has its own time limit: the whole run, a node's death included, takes longer
	// than one on a loaded machine.
	ctx := waittest.Context(t)
	for i := range tasks {
		if _, err := lead.Board().Create(ctx, coord.Task{Subject: fmt.Sprint("task ", i)}); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu        sync.Mutex
		completed []string
		delivered []string
	)
	work := func(n int) {
		t.Helper()
		for range n {
			ctx := waittest.Context(t)
			tk, err := worker.Board().ClaimNext(ctx, "w", time.Minute)
			if err != nil {
				t.Fatalf("claim: %v", err)
			}
			if _, err := worker.Board().Update(ctx, tk.ID, coord.TaskChange{Status: ptr(coord.StatusCompleted), IfOwner: ptr("w")}); err != nil {
				t.Fatalf("complete %s: %v", tk.ID, err)
			}
			mu.Lock()
			completed = append(completed, tk.ID)
			mu.Unlock()
		}
	}
	sent := 0
	mail := func(n int) {
		t.Helper()
		for range n {
			ctx := waittest.Context(t)
			text := fmt.Sprint("m", sent)
			sent++
			if err := lead.Mailbox().Send(ctx, coord.Message{ID: coord.NewID(), From: "lead", To: "w", Text: text}); err != nil {
				t.Fatalf("send: %v", err)
			}
			got, err := worker.Mailbox().Fetch(ctx, "w", 0)
			if err != nil {
				t.Fatalf("fetch: %v", err)
			}
			for _, m := range got {
				delivered = append(delivered, m.Text)
				if err := worker.Mailbox().Ack(ctx, "w", m.ID); err != nil {
					t.Fatalf("ack: %v", err)
				}
			}
		}
	}
	work(tasks / 2)
	mail(msgs / 2)
	victim := lead.Server()
	for i := range 3 {
		if c.Node(i).Name() == victim {
			t.Logf("killing %s, the node the lead is connected to", victim)
			c.Kill(i)
		}
	}
	work(tasks / 2)
	mail(msgs / 2)
	if _, err := worker.Board().ClaimNext(waittest.Context(t), "w", time.Minute); !errors.Is(err, coord.ErrNoTask) {
		t.Errorf("after %d completions the board still has work: %v", tasks, err)
	}
	slices.Sort(completed)
	if len(slices.Compact(slices.Clone(completed))) != tasks || len(completed) != tasks {
		t.Errorf("completed %v: want each of %d tasks once", completed, tasks)
	}
	var want []string
	for i := range msgs {
		want = append(want, fmt.Sprint("m", i))
	}
	if diff := cmp.Diff(want, delivered); diff != "" {
		t.Errorf("deliveries across the node's death mismatch (-want +got):\n%s", diff)
	}
	if s := lead.Server(); s == victim || s == "" {
		t.Errorf("the lead is connected to %q after %s died", s, victim)
	}
}
