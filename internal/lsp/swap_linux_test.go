package lsp

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/lsp/lsptest"
	"github.com/keel-dev/keel/internal/swaptest"
	"github.com/keel-dev/keel/internal/waittest"
)

// leaked returns a diagnostic the server published, for a file whose name starts with prefix,
// that quotes secret: the markers server quotes every line with BROKEN in it, so the secret's
// text reached it.
func leaked(c *client, prefix, secret string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for path, d := range c.docs {
		if !strings.HasPrefix(filepath.Base(path), prefix) {
			continue
		}
		for _, diag := range d.diags {
			if strings.Contains(diag.Message, secret) {
				return path + ": " + diag.Message
			}
		}
	}
	return ""
}

// TestServersGetNoSwappedInFile: keel reads the file it shows a language server (when a Read
// opens it, when an edit syncs it) outside the sandbox, by the path the permission gate
// checked. A command in the background exchanging that file with a link to a Read-denied
// secret, in a loop, never gets the secret's text to the server, which runs project code:
// the link is refused, not followed (adversary10 N5).
func TestServersGetNoSwappedInFile(t *testing.T) {
	const secret = "TOPSECRET-123"
	m, dir, _ := fake(t, lsptest.ModeMarkers, waittest.Timeout(), nil)
	write(t, filepath.Join(dir, "k.src"), "BROKEN "+secret+"\n")
	sentinel := filepath.Join(dir, "sentinel.src")
	write(t, sentinel, "BROKEN sentinel\n")
	if rep := m.After(t.Context(), "", sentinel); len(rep.Files) == 0 {
		t.Fatalf("the server did not start: %+v", rep)
	}
	c := m.clientFor(sentinel)

	t.Run("sync", func(t *testing.T) {
		x := filepath.Join(dir, "x.src")
		write(t, x, "clean\n")
		l := filepath.Join(dir, "l.src")
		if err := os.Symlink("k.src", l); err != nil {
			t.Fatal(err)
		}
		swaptest.Start(t, x, l)
		for i := range 200 {
			m.After(t.Context(), "", x)
			if got := leaked(c, "x", secret); got != "" {
				t.Errorf("sync %d sent the secret: %s", i, got)
				break
			}
		}
	})

	t.Run("open", func(t *testing.T) {
		for i := range 50 {
			x := filepath.Join(dir, fmt.Sprintf("open%d.src", i))
			write(t, x, "clean\n")
			l := filepath.Join(dir, fmt.Sprintf("link%d.src", i))
			if err := os.Symlink("k.src", l); err != nil {
				t.Fatal(err)
			}
			stop := swaptest.Start(t, x, l)
			c.open(x)
			stop()
		}
		// The server answers in order: once the sentinel's new version is published, so is
		// everything opened before it.
		write(t, sentinel, "BROKEN sentinel again\n")
		m.After(t.Context(), "", sentinel)
		if got := leaked(c, "open", secret); got != "" {
			t.Errorf("opening sent the secret: %s", got)
		}
	})
}
