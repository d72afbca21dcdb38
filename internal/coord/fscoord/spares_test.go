package fscoord

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/keel-dev/keel/internal/coord"
)

// Messages are published from a spare unnamed file, or — where there are none — from a named
// temporary file; either way the message arrives whole and tmp/ is left empty.
func TestPublishWithAndWithoutSpares(t *testing.T) {
	for _, spare := range []bool{true, false} {
		dir := t.TempDir()
		b, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !spare {
			b.spares.disable(nil)
		}
		ctx := context.Background()
		for _, text := range []string{"one", "two", "three"} {
			if err := b.Mailbox().Send(ctx, coord.Message{ID: coord.NewID(), From: "a", To: "b", Text: text}); err != nil {
				t.Fatal(err)
			}
		}
		msgs, err := b.Mailbox().Fetch(ctx, "b", 0)
		if err != nil || len(msgs) != 3 || msgs[2].Text != "three" {
			t.Errorf("spares %v: fetched %+v, %v", spare, msgs, err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		left, _ := filepath.Glob(filepath.Join(dir, "tmp", "*"))
		if len(left) != 0 {
			t.Errorf("spares %v: tmp/ holds %v after the sends", spare, left)
		}
		if _, err := os.Stat(filepath.Join(dir, "mail", "b", "new")); err != nil {
			t.Errorf("spares %v: %v", spare, err)
		}
	}
}
