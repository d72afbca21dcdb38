package sandbox

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/waittest"
)

// holdProxy holds each connection open until its client closes it, telling started and
// ended.
type holdProxy struct{ started, ended chan net.Conn }

func (h holdProxy) ServeConn(ctx context.Context, c net.Conn, deny func(host, why string)) {
	h.started <- c
	io.Copy(io.Discard, c)
	h.ended <- c
}

// flakyListener fails its first Accepts as a process out of files does.
type flakyListener struct {
	net.Listener
	fails int
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.fails > 0 {
		l.fails--
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	}
	return l.Listener.Accept()
}

// TestServeProxyBounds (ADV11 F3): connections held past one command's bound, or past the
// sandbox's, are closed at once and the refusal noted; one ended frees its place; and Accept
// failing with EMFILE does not end the proxy.
func TestServeProxyBounds(t *testing.T) {
	ctx, cancel := context.WithCancel(waittest.Context(t))
	defer cancel()
	all := &connSlots{max: 3}
	h := holdProxy{started: make(chan net.Conn, 8), ended: make(chan net.Conn, 8)}
	var f1, f2 refusals
	listen := func(f *refusals, fails int) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			serveProxy(ctx, &flakyListener{Listener: l, fails: fails}, h, f, &connSlots{max: 2}, all)
		}()
		t.Cleanup(func() { cancel(); <-done })
		return l.Addr().String()
	}
	dial := func(addr string) net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	closed := func(c net.Conn) bool { // the proxy closed it without a word
		c.SetReadDeadline(time.Now().Add(waittest.Timeout()))
		n, err := c.Read(make([]byte, 1))
		return n == 0 && err != nil
	}
	one, two := listen(&f1, 3), listen(&f2, 0)

	a := dial(one) // served after three EMFILEs
	waittest.Recv(t, "the first connection served", h.started)
	dial(one)
	waittest.Recv(t, "the second connection served", h.started)
	if !closed(dial(one)) {
		t.Fatal("a third connection of one command was served")
	}
	if got := f1.all(); !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, "more than 2 connections at once") }) {
		t.Fatalf("refusals: %q", got)
	}
	dial(two)
	waittest.Recv(t, "another command's connection served", h.started)
	if !closed(dial(two)) {
		t.Fatal("a fourth connection of the sandbox's commands was served")
	}
	if got := f2.all(); !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, "more than 3 connections at once") }) {
		t.Fatalf("refusals: %q", got)
	}
	a.Close()
	waittest.Recv(t, "the first connection to end", h.ended)
	waittest.Until(t, "its place freed", func() bool { all.mu.Lock(); defer all.mu.Unlock(); return all.n < 3 })
	dial(two)
	waittest.Recv(t, "a connection in the place freed", h.started)
}

// TestRefusalsAreBounded: the notes a run keeps of refused connections are capped in number
// and each host in length, since a command chooses both (adversary12b H2); a repeat is kept
// once, and past the cap one line says more were refused.
func TestRefusalsAreBounded(t *testing.T) {
	var f refusals
	f.deny(strings.Repeat("h", 1<<20), "not allowed")
	for i := range 3 * maxRefusals {
		f.deny(fmt.Sprintf("host%d.example:443", i), "not allowed")
		f.deny(fmt.Sprintf("host%d.example:443", i), "not allowed")
	}
	all := f.all()
	if len(all) != maxRefusals+1 || !strings.HasPrefix(all[len(all)-1], "more connections were refused") {
		t.Fatalf("%d notes, the last %q", len(all), all[len(all)-1])
	}
	if len(all[0]) > maxRefusedHost+len("…: not allowed") || all[1] != "host0.example:443: not allowed" {
		t.Fatalf("first notes: %.80q (%d bytes), %q", all[0], len(all[0]), all[1])
	}
}
