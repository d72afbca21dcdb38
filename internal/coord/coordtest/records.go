package coordtest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/waittest"
)

func request(from, to string) coord.Request {
	return coord.Request{ID: coord.NewID(), From: from, To: to, Type: "permission", Data: json.RawMessage(`{"tool":"Bash"}`)}
}

func testRequests(t *testing.T, s *store) {
	ctx := ctxOf(t)
	worker, lead := s.handle(t).Requests(), s.handle(t).Requests()
	r1, r2, r3 := request("alice", "team-lead"), request("bob", "team-lead"), request("bob", "carol")
	for _, r := range []coord.Request{r1, r2, r3, r1} { // r1 twice: idempotent
		if err := worker.Submit(ctx, r); err != nil {
			t.Fatalf("submit: %v", err)
		}
		s.clock.Advance(time.Second) // Pending is oldest first
	}
	pending := must[[]coord.Request](t, "pending")(lead.Pending(ctx, "team-lead"))
	if diff := cmp.Diff([]string{r1.ID, r2.ID}, reqIDs(pending)); diff != "" {
		t.Errorf("pending for team-lead mismatch (-want +got):\n%s", diff)
	}
	if string(pending[0].Data) != `{"tool":"Bash"}` || pending[0].From != "alice" || pending[0].Created.IsZero() {
		t.Errorf("pending request lost its fields: %+v", pending[0])
	}
	if all := must[[]coord.Request](t, "all pending")(lead.Pending(ctx, "")); len(all) != 3 {
		t.Errorf("pending for everyone: %d, want 3", len(all))
	}
	_, err := worker.Resolution(ctx, r1.ID)
	wantErr(t, "resolution before an answer", err, coord.ErrPending)
	answer := coord.Resolution{By: "team-lead", Data: json.RawMessage(`{"behavior":"allow"}`)}
	if err := lead.Resolve(ctx, r1.ID, answer); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "second answer", lead.Resolve(ctx, r1.ID, coord.Resolution{By: "x", Data: json.RawMessage(`{"behavior":"deny"}`)}), coord.ErrResolved)
	got := must[coord.Resolution](t, "resolution")(worker.Resolution(ctx, r1.ID))
	if got.ID != r1.ID || string(got.Data) != `{"behavior":"allow"}` || got.By != "team-lead" || got.Resolved.IsZero() {
		t.Errorf("resolution = %+v; the first answer must win", got)
	}
	if p := must[[]coord.Request](t, "pending")(lead.Pending(ctx, "team-lead")); len(p) != 1 || p[0].ID != r2.ID {
		t.Errorf("a resolved request is still pending: %v", reqIDs(p))
	}
	wantErr(t, "resolve unknown", lead.Resolve(ctx, "nope", answer), coord.ErrNotFound)
	_, err = lead.Resolution(ctx, "nope")
	wantErr(t, "resolution of unknown", err, coord.ErrNotFound)
	// Submitting an answered request again does not reopen it.
	if err := worker.Submit(ctx, r1); err != nil {
		t.Fatal(err)
	}
	if p := must[[]coord.Request](t, "pending")(lead.Pending(ctx, "team-lead")); len(p) != 1 {
		t.Errorf("resubmitting an answered request reopened it: %v", reqIDs(p))
	}
	big := request("alice", "team-lead")
	big.Data = json.RawMessage(`"` + strings.Repeat("x", coord.DefaultLimits.MessageBytes) + `"`)
	wantErr(t, "oversize request", worker.Submit(ctx, big), coord.ErrTooLarge)
}

func reqIDs(rs []coord.Request) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func testRequestsWatch(t *testing.T, s *store) {
	ctx := ctxOf(t)
	worker, lead := s.handle(t).Requests(), s.handle(t).Requests()
	leadCh := must[<-chan struct{}](t, "watch")(lead.Watch(ctx))
	workerCh := must[<-chan struct{}](t, "watch")(worker.Watch(ctx))
	r := request("alice", "team-lead")
	waitFor(t, leadCh, "the lead to see the request", func() bool {
		p, err := lead.Pending(ctx, "team-lead")
		return err == nil && len(p) == 1
	}, func() {
		if err := worker.Submit(ctx, r); err != nil {
			t.Fatal(err)
		}
	})
	waitFor(t, workerCh, "the worker to see the answer", func() bool {
		_, err := worker.Resolution(ctx, r.ID)
		return err == nil
	}, func() {
		if err := lead.Resolve(ctx, r.ID, coord.Resolution{By: "team-lead", Data: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	})
}

func testRecords(t *testing.T, s *store) {
	ctx := ctxOf(t)
	a, b := s.handle(t).Records(), s.handle(t).Records()
	r1 := must[uint64](t, "put")(a.Put(ctx, "members/alice", json.RawMessage(`{"state":"working"}`)))
	s.clock.Advance(time.Second)
	r2 := must[uint64](t, "put again")(b.Put(ctx, "members/alice", json.RawMessage(`{"state":"idle"}`)))
	if r1 == 0 || r2 <= r1 {
		t.Errorf("revisions %d then %d; want increasing from 1", r1, r2)
	}
	got := must[coord.Record](t, "get")(a.Get(ctx, "members/alice"))
	if got.Key != "members/alice" || string(got.Value) != `{"state":"idle"}` || got.Revision != r2 || !got.Updated.Equal(s.clock.Now()) {
		t.Errorf("get = %+v", got)
	}
	must[uint64](t, "put bob")(a.Put(ctx, "members/bob", json.RawMessage(`1`)))
	must[uint64](t, "put team")(a.Put(ctx, "team", json.RawMessage(`{"lead":"x"}`)))
	must[uint64](t, "put other prefix")(a.Put(ctx, "membersx/carol", json.RawMessage(`2`)))
	list := must[[]coord.Record](t, "list")(b.List(ctx, "members/"))
	var keys []string
	for _, r := range list {
		keys = append(keys, r.Key)
	}
	if diff := cmp.Diff([]string{"members/alice", "members/bob"}, keys); diff != "" {
		t.Errorf("list members/ mismatch (-want +got):\n%s", diff)
	}
	if all := must[[]coord.Record](t, "list all")(b.List(ctx, "")); len(all) != 4 {
		t.Errorf("list of everything: %d records, want 4", len(all))
	}
	if err := b.Delete(ctx, "members/bob"); err != nil {
		t.Fatal(err)
	}
	_, err := a.Get(ctx, "members/bob")
	wantErr(t, "get deleted", err, coord.ErrNotFound)
	if err := b.Delete(ctx, "members/bob"); err != nil {
		t.Errorf("deleting a missing key: %v", err)
	}
}

func testRecordsCAS(t *testing.T, s *store) {
	ctx := ctxOf(t)
	a, b := s.handle(t).Records(), s.handle(t).Records()
	rev := must[uint64](t, "create")(a.Create(ctx, "team", json.RawMessage(`{"v":1}`)))
	_, err := b.Create(ctx, "team", json.RawMessage(`{"v":2}`))
	wantErr(t, "create existing", err, coord.ErrExists)
	rev2 := must[uint64](t, "update")(b.Update(ctx, "team", json.RawMessage(`{"v":2}`), rev))
	_, err = a.Update(ctx, "team", json.RawMessage(`{"v":3}`), rev)
	wantErr(t, "update at a stale revision", err, coord.ErrConflict)
	if g := must[coord.Record](t, "get")(a.Get(ctx, "team")); string(g.Value) != `{"v":2}` || g.Revision != rev2 {
		t.Errorf("after a refused update: %+v", g)
	}
	_, err = a.Update(ctx, "ghost", json.RawMessage(`1`), 1)
	wantErr(t, "update missing", err, coord.ErrNotFound)
	// Concurrent creates: exactly one wins.
	wins := make(chan int, 8)
	for i := range 8 {
		r := s.handle(t).Records()
		go func() {
			if _, err := r.Create(ctx, "leader", json.RawMessage(fmt.Sprint(i))); err == nil {
				wins <- i
			} else {
				wins <- -1
			}
		}()
	}
	n := 0
	for range 8 {
		if <-wins >= 0 {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d concurrent creates of one key succeeded, want 1", n)
	}
}

func testRecordsWatch(t *testing.T, s *store) {
	ctx := ctxOf(t)
	watcher, writer := s.handle(t).Records(), s.handle(t).Records()
	ch := must[<-chan struct{}](t, "watch")(watcher.Watch(ctx, "members/"))
	for round := range 3 {
		want := fmt.Sprintf(`{"beat":%d}`, round)
		waitFor(t, ch, "a heartbeat to be seen", func() bool {
			r, err := watcher.Get(ctx, "members/alice")
			return err == nil && string(r.Value) == want
		}, func() { must[uint64](t, "put")(writer.Put(ctx, "members/alice", json.RawMessage(want))) })
	}
}

func testRecordsInvalid(t *testing.T, s *store) {
	ctx := ctxOf(t)
	r := s.handle(t).Records()
	for _, key := range []string{"", "/x", "x/", "a//b", "../up", "a b", "a/.hidden"} {
		_, err := r.Put(ctx, key, json.RawMessage(`1`))
		wantErr(t, fmt.Sprintf("put %q", key), err, coord.ErrInvalid)
	}
	_, err := r.Put(ctx, "ok", json.RawMessage(`not json`))
	wantErr(t, "put a value that is not JSON", err, coord.ErrInvalid)
}

func testClose(t *testing.T, s *store) {
	ctx := ctxOf(t)
	b := s.open(t, cleanCfg(s))
	ch := must[<-chan struct{}](t, "watch")(b.Mailbox().Watch(ctx, "bob"))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	drained := waittest.Context(t)
	for open := true; open; {
		select {
		case _, open = <-ch:
		case <-drained.Done():
			t.Fatal("a watch channel stayed open after Close")
		}
	}
	_, err := b.Board().List(ctx)
	wantErr(t, "list after close", err, coord.ErrClosed)
	wantErr(t, "send after close", b.Mailbox().Send(ctx, msg("a", "bob", "x")), coord.ErrClosed)
}
