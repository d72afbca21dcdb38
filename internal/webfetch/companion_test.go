package webfetch

import (
	"bufio"
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/keel-dev/keel/internal/buildtest"
	"github.com/keel-dev/keel/internal/companion"
)

// The real keel-web converts what keel fetched: HTML into Markdown with its links made
// absolute, text in another charset into UTF-8.
func TestCompanionConverts(t *testing.T) {
	s := newSite(t, false)
	f := New(Options{CacheTTL: -1, Converter: &Companion{Path: buildtest.Companion(t, "keel-web")}})
	tests := []pageCase{
		{"/page", []string{"# Hello", "**bold**", "[a link](" + s.srv.URL + "/other)", "- one"}, []string{"alert", "color:red"}},
		{"/latin1", []string{"café"}, nil},
		{"/sjis", []string{"日本"}, nil},
		{"/latin1.txt", []string{"naïve"}, nil},
		{"/sjis.txt", []string{"日本"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) { tt.fetch(t, f, s) })
	}
}

// Without keel-web the fetch fails, naming where keel looked and how to install it, and a
// page that came over HTTPS is not fetched again over plain HTTP.
func TestCompanionMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	s := newSite(t, true)
	plainURL := strings.Replace(s.url("/page"), "https://", "http://", 1)
	_, err := New(Options{CacheTTL: -1, TLS: trusting(s)}).Fetch(t.Context(), plainURL, true)
	var conv *ConversionError
	if !errors.As(err, &conv) || !errors.Is(err, companion.ErrNotFound) {
		t.Fatalf("err = %v, want a ConversionError wrapping companion.ErrNotFound", err)
	}
	self, _ := os.Executable()
	for _, want := range []string{Program, filepath.Dir(self), "PATH", "make build", "go install ./cmd/..."} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if n := s.hits.Load(); n != 1 {
		t.Errorf("the page was requested %d times, want 1", n)
	}
}

// fakeWeb writes a shell script standing in for keel-web.
func fakeWeb(t *testing.T, script string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), Program)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// A failing keel-web is an error with its exit status and its message (its one stderr line,
// without the program's prefix); one that says nothing gives its exit status.
func TestCompanionFails(t *testing.T) {
	base, err := url.Parse("https://example.com/docs?token=secret")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, script string
		want         []string
	}{
		{"message", "cat >/dev/null; echo 'keel-web: the body is over the 4-byte limit' >&2; exit 1",
			[]string{"convert the HTML to Markdown: keel-web (exit status 1): the body is over the 4-byte limit"}},
		{"silent", "exit 3", []string{"run keel-web: exit status 3"}},
		// The page's path and query stay off keel-web's command line.
		{"arguments", `echo "$*" >&2; exit 1`, []string{"-max-bytes 10485760 -content-type text/html -base https://example.com"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Companion{Path: fakeWeb(t, tt.script)}
			md, err := c.Markdown(t.Context(), []byte("<p>hello</p>"), "text/html", base)
			if err == nil {
				t.Fatalf("Markdown = %q, want an error", md)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "/docs") {
				t.Errorf("error %q shows the page's path or query", err)
			}
		})
	}
}

// Cancelling the fetch kills keel-web.
func TestCompanionCancelled(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "started")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	c := &Companion{Path: fakeWeb(t, "echo started >'"+fifo+"'; exec sleep 600")}
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		// Opening the pipe waits for keel-web to open it: it has started.
		if r, err := os.Open(fifo); err == nil {
			bufio.NewReader(r).ReadString('\n')
			r.Close()
		}
		cancel()
	}()
	_, err := c.Decode(ctx, []byte("caf\xe9"), "text/plain; charset=iso-8859-1")
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "keel-web stopped") {
		t.Errorf("err = %v, want keel-web stopped: context canceled", err)
	}
}
