package coord_test

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/fscoord"
	"github.com/keel-dev/keel/internal/waittest"
)

// TestModify: concurrent read-modify-writes through separate handles lose no update, an
// error from fn writes nothing, and a missing key is ErrNotFound.
func TestModify(t *testing.T) {
	ctx := waittest.Context(t)
	dir := t.TempDir()
	open := func() coord.Records {
		b, err := fscoord.Open(dir, fscoord.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b.Records()
	}
	type counter struct{ N int }
	first := open()
	if _, err := first.Create(ctx, "counter", json.RawMessage(`{"N":0}`)); err != nil {
		t.Fatal(err)
	}
	const writers, each = 4, 10
	var wg sync.WaitGroup
	for range writers {
		rec := open()
		wg.Go(func() {
			for range each {
				if _, err := coord.Modify(ctx, rec, "counter", func(c *counter) error { c.N++; return nil }); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	stop := errors.New("stop")
	got, err := coord.Modify(ctx, first, "counter", func(c *counter) error { c.N = -1; return stop })
	if !errors.Is(err, stop) || got.N != -1 {
		t.Fatalf("fn's error: %v, value %+v", err, got)
	}
	r, err := first.Get(ctx, "counter")
	if err != nil || string(r.Value) != `{"N":40}` {
		t.Fatalf("after %d increments and a refused change: %s, %v; want N 40", writers*each, r.Value, err)
	}
	if _, err := coord.Modify(ctx, first, "missing", func(*counter) error { return nil }); !errors.Is(err, coord.ErrNotFound) {
		t.Fatalf("missing key: %v, want ErrNotFound", err)
	}
}
