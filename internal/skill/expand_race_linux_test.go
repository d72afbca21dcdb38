package skill

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/keel-dev/keel/internal/swaptest"
	"github.com/keel-dev/keel/internal/waittest"
)

// TestMentionSwappedForALinkIsNeverRead: a command in the background exchanges a skill's
// @file with a link to a refused file, in a loop, while the skill is invoked over and over.
// The check and the read are of one resolved path, opened with no link on the way, so the
// refused file never reaches the text (adversary11 F5).
func TestMentionSwappedForALinkIsNeverRead(t *testing.T) {
	l := newLayout(t)
	secrets := filepath.Join(l.root, "secrets")
	secret := write(t, secrets, "k.txt", "TOPSECRET-123")
	style := write(t, l.cwd, "docs/style.md", "the house style")
	link := filepath.Join(l.cwd, "docs", "ls.md")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	write(t, l.root, ".keel/commands/style.md", "Follow the house style in @docs/style.md")
	c, _ := l.load(t, func(o *Options) { o.Refuse = swaptest.RefuseUnder(secrets) })
	swaptest.Start(t, style, link)
	for range 2000 {
		inv, err := c.Invoke(t.Context(), "style", "", ByUser, l.cwd)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(inv.Text, "TOPSECRET") {
			t.Fatalf("a refused file reached the skill's text: %q", inv.Text)
		}
	}
}

// TestMentionSwappedForAFIFODoesNotHang: the mentioned file exchanged with a FIFO in a loop;
// every invocation returns, the FIFO is never waited on (adversary11 F6).
func TestMentionSwappedForAFIFODoesNotHang(t *testing.T) {
	l := newLayout(t)
	style := write(t, l.cwd, "docs/style.md", "the house style")
	fifo := filepath.Join(l.cwd, "docs", "f.md")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	write(t, l.root, ".keel/commands/style.md", "Follow the house style in @docs/style.md")
	c, _ := l.load(t)
	swaptest.Start(t, style, fifo)
	done := make(chan error, 1)
	go func() {
		for range 500 {
			if _, err := c.Invoke(t.Context(), "style", "", ByUser, l.cwd); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	if err := waittest.Recv(t, "the invocations to return", done); err != nil {
		t.Fatal(err)
	}
}

// TestLinkedMentionStillAttached: a mention that is a stable link to an allowed file attaches
// that file; one that links to a refused file does not.
func TestLinkedMentionStillAttached(t *testing.T) {
	l := newLayout(t)
	secrets := filepath.Join(l.root, "secrets")
	secret := write(t, secrets, "k.txt", "TOPSECRET-123")
	guide := write(t, l.root, "shared/guide.md", "the guide")
	for name, target := range map[string]string{"docs/guide.md": guide, "docs/leak.md": secret} {
		p := filepath.Join(l.cwd, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	write(t, l.root, ".keel/commands/g.md", "Read @docs/guide.md and @docs/leak.md")
	c, _ := l.load(t, func(o *Options) { o.Refuse = swaptest.RefuseUnder(secrets) })
	inv, err := c.Invoke(t.Context(), "g", "", ByUser, l.cwd)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(inv.Text, "<file path=\"docs/guide.md\">\nthe guide") || strings.Contains(inv.Text, "TOPSECRET") ||
		!strings.Contains(inv.Text, "@docs/leak.md is not included") {
		t.Errorf("text = %q", inv.Text)
	}
}

// TestCommandFileSwappedForALinkIsNeverRead: a command's own file exchanged in a loop with a
// link to a refused file: the body read is the file Refuse judged, never the secret.
func TestCommandFileSwappedForALinkIsNeverRead(t *testing.T) {
	l := newLayout(t)
	secrets := filepath.Join(l.root, "secrets")
	secret := write(t, secrets, "k.txt", "TOPSECRET-123")
	cmd := write(t, l.root, ".keel/commands/style.md", "Follow the house style")
	c, _ := l.load(t, func(o *Options) { o.Refuse = swaptest.RefuseUnder(secrets) })
	link := filepath.Join(l.root, ".keel", "l.md") // outside commands/, so not an entry itself
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	swaptest.Start(t, cmd, link)
	for range 2000 {
		if inv, err := c.Invoke(t.Context(), "style", "", ByUser, l.cwd); err == nil && strings.Contains(inv.Text, "TOPSECRET") {
			t.Fatalf("a refused file was read as the command's body: %q", inv.Text)
		}
	}
}

// TestFIFOEntryDoesNotHangLoad: a FIFO a command left as a SKILL.md or a command file is
// skipped at discovery; Load returns.
func TestFIFOEntryDoesNotHangLoad(t *testing.T) {
	l := newLayout(t)
	for _, rel := range []string{".keel/skills/s/SKILL.md", ".keel/commands/c.md"} {
		p := filepath.Join(l.root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan *Catalog, 1)
	go func() { c, _ := l.load(t); done <- c }()
	if c := waittest.Recv(t, "Load to return", done); c == nil {
		t.Fatal("no catalog")
	}
}
