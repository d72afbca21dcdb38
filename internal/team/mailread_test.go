package team

import (
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/waittest"
)

// A message read by its recipient is reported once, with its send time (telemetry's mail
// latency): handed to a request, or consumed by the runtime; a redelivery after a failed
// request is not a second read.
func TestInboxReportsEachReadOnce(t *testing.T) {
	tm := newLead(t, coord.Limits{})
	ctx := waittest.Context(t)
	var (
		mu    sync.Mutex
		reads []event.TeamMessageRead
	)
	tm.SetEmit(func(e event.Event) {
		if r, ok := e.(event.TeamMessageRead); ok {
			mu.Lock()
			reads = append(reads, r)
			mu.Unlock()
		}
	})
	mb := tm.be.Mailbox()
	m1 := coord.Message{ID: newID(), From: "alice", To: LeadAlias, Text: "done", Summary: "done"}
	if err := mb.Send(ctx, m1); err != nil {
		t.Fatal(err)
	}
	if got := tm.leadInbox.Observe(ctx); len(got) != 1 {
		t.Fatalf("observe: %v", got)
	}
	tm.leadInbox.Requeue()
	if got := tm.leadInbox.Observe(ctx); len(got) != 1 {
		t.Fatalf("observe after requeue: %v", got)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []event.TeamMessageRead{{ID: m1.ID, Sender: "alice", Recipient: LeadAlias}}
	if diff := cmp.Diff(want, reads, cmpopts.IgnoreFields(event.TeamMessageRead{}, "Sent")); diff != "" {
		t.Errorf("reads mismatch (-want +got):\n%s", diff)
	}
	if len(reads) == 1 && reads[0].Sent.IsZero() {
		t.Error("the read carries no send time")
	}
}
