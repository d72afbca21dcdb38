package egress

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/waittest"
)

// deadlines is a connection that records the read deadlines set on it.
type deadlines struct {
	net.Conn
	mu  sync.Mutex
	set []time.Time
}

func (d *deadlines) SetReadDeadline(at time.Time) error {
	d.mu.Lock()
	d.set = append(d.set, at)
	d.mu.Unlock()
	return d.Conn.SetReadDeadline(at)
}

func (d *deadlines) last() (time.Time, int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.set) == 0 {
		return time.Time{}, 0
	}
	return d.set[len(d.set)-1], len(d.set)
}

// serveOne serves the proxy p on one connection accepted from a listener on 127.0.0.1, and
// returns the client's end, the server's, and a channel closed when ServeConn returns.
func serveOne(t *testing.T, p *Proxy) (net.Conn, *deadlines, <-chan struct{}) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	done, accepted := make(chan struct{}), make(chan *deadlines, 1)
	go func() {
		defer close(done)
		c, err := l.Accept()
		if err != nil {
			close(accepted)
			return
		}
		defer c.Close()
		d := &deadlines{Conn: c}
		accepted <- d
		p.ServeConn(waittest.Context(t), d, nil)
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, waittest.Recv(t, "the connection", accepted), done
}

// TestHandshakeDeadline: a client that never finishes its request (an HTTP header, a SOCKS
// greeting) is dropped when the handshake's deadline passes (ADV11 F3: idle connections
// held keel's files open until it had none left); the clock is one whose deadline has passed.
func TestHandshakeDeadline(t *testing.T) {
	for name, sent := range map[string]string{"idle": "", "http": "CONNECT example.com:443 HTTP/1.1\r\n", "socks": "\x05"} {
		t.Run(name, func(t *testing.T) {
			p := New(Rules{})
			p.now = func() time.Time { return time.Unix(0, 0) }
			c, _, done := serveOne(t, p)
			if _, err := io.WriteString(c, sent); err != nil {
				t.Fatal(err)
			}
			waittest.Recv(t, "the proxy to drop the idle client", done)
		})
	}
}

// TestTunnelHasNoDeadline: once CONNECT is answered, the handshake's deadline is taken off:
// a tunnel may stay idle as long as it likes.
func TestTunnelHasNoDeadline(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	go func() {
		c, err := up.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c) // echo
	}()
	p := New(Rules{Allowed: []string{"127.0.0.1"}})
	c, server, _ := serveOne(t, p)
	addr := up.Addr().String()
	if _, err := io.WriteString(c, "CONNECT "+addr+" HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		t.Fatal(err)
	}
	line, err := br.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ping" {
		t.Fatalf("through the tunnel: %q, %v", line, err)
	}
	if at, n := server.last(); n == 0 || !at.IsZero() {
		t.Fatalf("the tunnel's read deadline is %v (%d set): the handshake's was left in place", at, n)
	}
}

// TestHandshakeIsBounded: a request line or SOCKS request that never ends is cut at
// maxHandshake bytes, not read on until the deadline (adversary12b H2: one CONNECT line of
// 300 MB held 1.9 GB of keel's memory); the clock is one whose deadline is an hour away.
func TestHandshakeIsBounded(t *testing.T) {
	for name, lead := range map[string]string{"http": "CONNECT ", "plain": "GET http://", "socks": "\x05\x01\x00\x05\x01\x00\x03"} {
		t.Run(name, func(t *testing.T) {
			p := New(Rules{})
			p.now = func() time.Time { return time.Now().Add(time.Hour) }
			c, _, done := serveOne(t, p)
			go func() {
				// Errors are expected: the proxy stops reading and closes.
				io.WriteString(c, lead)
				chunk := strings.Repeat("a", 64<<10)
				for range 64 {
					if _, err := io.WriteString(c, chunk); err != nil {
						return
					}
				}
			}()
			waittest.Recv(t, "the proxy to drop the client past the bound", done)
		})
	}
}

// TestTunnelIsNotBounded: the handshake's bound is lifted once tunnelling, over CONNECT and
// SOCKS5 alike: far more than maxHandshake goes through and comes back.
func TestTunnelIsNotBounded(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	ap := netip.MustParseAddrPort(up.Addr().String())
	greetings := map[string]string{
		"connect": "CONNECT " + ap.String() + " HTTP/1.1\r\nHost: " + ap.String() + "\r\n\r\n",
		"socks":   "\x05\x01\x00\x05\x01\x00\x01" + string(ap.Addr().AsSlice()) + string([]byte{byte(ap.Port() >> 8), byte(ap.Port())}),
	}
	for name, greeting := range greetings {
		t.Run(name, func(t *testing.T) {
			c, _, _ := serveOne(t, New(Rules{Allowed: []string{"127.0.0.1"}}))
			if _, err := io.WriteString(c, greeting); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(c)
			if name == "connect" {
				if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("CONNECT: %v %v", resp, err)
				}
			} else if _, err := io.ReadFull(br, make([]byte, 12)); err != nil { // greeting and request replies
				t.Fatal(err)
			}
			payload := strings.Repeat("x", 4*(64<<10))
			go io.WriteString(c, payload)
			got := make([]byte, len(payload))
			if _, err := io.ReadFull(br, got); err != nil || string(got) != payload {
				t.Fatalf("through the tunnel: %d bytes, %v", len(got), err)
			}
		})
	}
}

// TestTunnelEndsWithItsContext: a tunnel whose upstream neither answers nor closes — the
// client gone, its side only half-closing the upstream — ends when the proxy's context does,
// so the command's release, which waits for its connections, returns (adversary12b H3).
func TestTunnelEndsWithItsContext(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	held := make(chan net.Conn, 1)
	go func() {
		if c, err := up.Accept(); err == nil {
			held <- c // never read, never answered, never closed until the test ends
		}
	}()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithCancel(waittest.Context(t))
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		New(Rules{Allowed: []string{"127.0.0.1"}}).ServeConn(ctx, c, nil)
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	addr := up.Addr().String()
	if _, err := io.WriteString(c, "CONNECT "+addr+" HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	c.Close()
	defer func() { (<-held).Close() }()
	cancel()
	waittest.Recv(t, "the tunnel to end with its context", done)
}
