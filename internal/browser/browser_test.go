package browser

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/keel-dev/keel/internal/waittest"
)

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	// The URL is the last argument, or stands where %s is; spaces and quotes survive.
	plain := filepath.Join(dir, "it's a page")
	if err := Open("touch", plain); err != nil {
		t.Fatal(err)
	}
	placed := filepath.Join(dir, "placed")
	if err := Open("touch %s.done", placed); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{plain, placed + ".done"} {
		waittest.Until(t, "the browser command to create "+p, func() bool { _, err := os.Stat(p); return err == nil })
	}
	if err := Open("", "https://example.com"); err != nil {
		t.Errorf("no $BROWSER: %v, want nothing done", err)
	}
}
