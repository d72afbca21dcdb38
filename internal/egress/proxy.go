package egress

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// Proxy serves HTTP and SOCKS5 proxy connections under its rules. It is safe for concurrent
// use.
type Proxy struct {
	rules  Rules
	dialer net.Dialer
	// now is the clock the handshake's deadline is counted from (a test's is in the past).
	now func() time.Time
}

// handshakeLimit bounds the wait for a client's request — the CONNECT or plain request's
// header, the SOCKS greeting and request — so that idle connections do not pile up, each an
// open file of keel's. Once tunnelling, there is none: a long-lived connection is fine.
const handshakeLimit = 10 * time.Second

// maxHandshake bounds, in bytes, what a client sends before tunnelling or forwarding starts:
// the request line and header, the SOCKS greeting and request. http.ReadRequest reads a line
// of any length (only net/http's server caps a header), and loopback carries hundreds of
// megabytes within handshakeLimit, so without it one request line fills keel's memory.
const maxHandshake = 64 << 10

// New returns a proxy applying r.
func New(r Rules) *Proxy {
	return &Proxy{rules: r, dialer: net.Dialer{Timeout: 30 * time.Second}, now: time.Now}
}

// ServeConn serves one client connection until it ends or ctx does; the protocol is told by
// the first byte (5 is SOCKS5, anything else HTTP). deny is told every refused destination.
func (p *Proxy) ServeConn(ctx context.Context, conn net.Conn, deny func(host, why string)) {
	if err := conn.SetReadDeadline(p.now().Add(handshakeLimit)); err != nil {
		return
	}
	limited := &io.LimitedReader{R: conn, N: maxHandshake}
	br := bufio.NewReader(limited)
	// Past the handshake a connection carries any amount: the handler lifts the bound.
	unbound := func() { limited.N = math.MaxInt64 }
	first, err := br.Peek(1)
	if err != nil {
		return
	}
	if first[0] == 5 {
		p.socks(ctx, conn, br, unbound, deny)
		return
	}
	p.http(ctx, conn, br, unbound, deny)
}

// connect decides host:port and dials the checked address.
func (p *Proxy) connect(ctx context.Context, host string, port int, deny func(host, why string)) (net.Conn, error) {
	ap, err := p.rules.Decide(ctx, host, port)
	if err != nil {
		var d *Denial
		if errors.As(err, &d) && deny != nil {
			deny(d.Host, d.Why)
		}
		return nil, err
	}
	return p.dialer.DialContext(ctx, "tcp", ap.String())
}

func (p *Proxy) http(ctx context.Context, conn net.Conn, br *bufio.Reader, unbound func(), deny func(host, why string)) {
	req, err := http.ReadRequest(br)
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			io.WriteString(conn, "HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n\r\n")
		}
		return
	}
	if conn.SetReadDeadline(time.Time{}) != nil {
		return
	}
	unbound() // a plain request's body is read from here on
	host, portStr, err := net.SplitHostPort(req.Host)
	if err != nil {
		host, portStr = req.Host, "80"
		if req.Method == http.MethodConnect {
			portStr = "443"
		}
	}
	port, _ := strconv.Atoi(portStr)
	up, err := p.connect(ctx, host, port, deny)
	if err != nil {
		fmt.Fprintf(conn, "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nkeel sandbox: %v\n", err)
		return
	}
	defer up.Close()
	if req.Method == http.MethodConnect {
		if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
		splice(ctx, conn, br, up)
		return
	}
	// A plain request is forwarded once, in origin form; the connection then closes, so a
	// second request cannot reach another host through it unchecked.
	req.RequestURI = ""
	req.Header.Set("Connection", "close")
	req.Header.Del("Proxy-Connection")
	req.Header.Del("Proxy-Authorization")
	if err := req.Write(up); err != nil {
		return
	}
	io.Copy(conn, up)
}

// SOCKS5 reply codes (RFC 1928).
const (
	socksOK          = 0
	socksNotAllowed  = 2
	socksUnreachable = 4
	socksBadCommand  = 7
	socksBadAddress  = 8
)

func (p *Proxy) socks(ctx context.Context, conn net.Conn, br *bufio.Reader, unbound func(), deny func(host, why string)) {
	// Greeting: version, methods; only "no authentication" is offered.
	var hdr [2]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return
	}
	if _, err := io.CopyN(io.Discard, br, int64(hdr[1])); err != nil {
		return
	}
	if _, err := conn.Write([]byte{5, 0}); err != nil {
		return
	}
	var req [4]byte
	if _, err := io.ReadFull(br, req[:]); err != nil {
		return
	}
	reply := func(code byte) { conn.Write([]byte{5, code, 0, 1, 0, 0, 0, 0, 0, 0}) }
	if req[1] != 1 { // CONNECT only: no BIND, no UDP
		reply(socksBadCommand)
		return
	}
	var host string
	switch req[3] {
	case 1, 4:
		b := make([]byte, map[byte]int{1: 4, 4: 16}[req[3]])
		if _, err := io.ReadFull(br, b); err != nil {
			return
		}
		a, _ := netip.AddrFromSlice(b)
		host = a.Unmap().String()
	case 3:
		n, err := br.ReadByte()
		if err != nil {
			return
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			return
		}
		host = string(b)
	default:
		reply(socksBadAddress)
		return
	}
	var pb [2]byte
	if _, err := io.ReadFull(br, pb[:]); err != nil || conn.SetReadDeadline(time.Time{}) != nil {
		return
	}
	up, err := p.connect(ctx, host, int(binary.BigEndian.Uint16(pb[:])), deny)
	if err != nil {
		var d *Denial
		if errors.As(err, &d) {
			reply(socksNotAllowed)
		} else {
			reply(socksUnreachable)
		}
		return
	}
	defer up.Close()
	reply(socksOK)
	unbound()
	splice(ctx, conn, br, up)
}

// splice copies both ways until either side ends, or ctx does: the client's side ending
// only half-closes the upstream (a client may wait for the answer), so an upstream that
// neither answers nor closes would otherwise hold the tunnel — and the command's release,
// which waits for its connections — for ever (adversary12b H3).
func splice(ctx context.Context, client net.Conn, fromClient io.Reader, up net.Conn) {
	stop := context.AfterFunc(ctx, func() { client.Close(); up.Close() })
	defer stop()
	var wg sync.WaitGroup
	wg.Go(func() {
		io.Copy(up, fromClient)
		if c, ok := up.(*net.TCPConn); ok {
			c.CloseWrite()
		}
	})
	io.Copy(client, up)
	client.Close()
	up.Close()
	wg.Wait()
}
