package natscoord_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/natscoord"
	"github.com/keel-dev/keel/internal/coord/natscoord/natstest"
	"github.com/keel-dev/keel/internal/waittest"
)

// Listings never leave out a key that exists while others keep writing (heartbeats do): a
// KV watch's initial listing can end early under concurrent writes, so neither records nor a
// handle's board may rely on one.
func TestListingsUnderConcurrentWrites(t *testing.T) {
	srv := natstest.Start(t)
	ctx := waittest.Context(t)
	opts := natscoord.Options{URL: srv.URL(), Team: "busy"}
	reader, writer := open(t, opts), open(t, opts)
	for _, k := range []string{"members/team-lead", "members/w1", "members/w2"} {
		if _, err := writer.Records().Put(ctx, k, json.RawMessage(`1`)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		if _, err := writer.Board().Create(ctx, coord.Task{Subject: fmt.Sprint("t", i)}); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// The writer lives as long as the test (stop ends it); each listing has its own time limit:
	// all of them take longer than one on a loaded machine.
	wg.Go(func() {
		ctx := t.Context()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_, _ = writer.Records().Put(ctx, fmt.Sprintf("members/w%d", 1+i%2), json.RawMessage(fmt.Sprint(i)))
			_, _ = writer.Board().Update(ctx, fmt.Sprint(1+i%5), coord.TaskChange{Metadata: map[string]json.RawMessage{"beat": json.RawMessage(fmt.Sprint(i))}})
		}
	})
	defer func() {
		close(stop)
		wg.Wait()
	}()
	for i := range 200 {
		recs, err := reader.Records().List(waittest.Context(t), "members/")
		if err != nil || len(recs) != 3 {
			t.Fatalf("listing %d: %d records (%v), want 3", i, len(recs), err)
		}
	}
	for i := range 10 {
		fresh := open(t, opts)
		tasks, err := fresh.Board().List(waittest.Context(t))
		if err != nil || len(tasks) != 5 {
			t.Fatalf("handle %d opened amid writes sees %d tasks (%v), want 5", i, len(tasks), err)
		}
		_ = fresh.Close()
	}
}
