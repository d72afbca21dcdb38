package egress

import (
	"bufio"
	"io"
	"net"
	"net/http"
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
