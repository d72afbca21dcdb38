package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"time"
)

// refusals are the connections a run's proxy refused, each once, as "host: why".
type refusals struct {
	mu   sync.Mutex
	list []string
}

// A run keeps at most maxRefusals notes, the host in each cut to maxRefusedHost bytes: the
// host is what a command sent, and the notes stay in keel's memory until it ends.
const (
	maxRefusals    = 64
	maxRefusedHost = 300
)

func (f *refusals) deny(host, why string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(host) > maxRefusedHost {
		host = strings.ToValidUTF8(host[:maxRefusedHost], "") + "…"
	}
	note := why
	if host != "" {
		note = host + ": " + why
	}
	switch {
	case slices.Contains(f.list, note):
	case len(f.list) < maxRefusals:
		f.list = append(f.list, note)
	case len(f.list) == maxRefusals:
		f.list = append(f.list, "more connections were refused; only the first are named")
	}
}

func (f *refusals) all() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.list)
}

// maxRunProxyConns bounds the connections one command holds to its proxy at once, and
// maxProxyConns those of all the sandbox's commands: each is an open file of keel's, and a
// command holding thousands idle would leave keel none to start the next with. A parallel
// download rarely holds more than a few dozen.
const (
	maxRunProxyConns = 256
	maxProxyConns    = 1024
)

// acceptBackoff bounds the wait before accepting again after Accept failed: out of files
// (EMFILE) is not for ever, and the command's proxy must not stay dead after it.
const acceptBackoff = time.Second

// connSlots counts connections held at once, up to max.
type connSlots struct {
	mu     sync.Mutex
	n, max int
}

func (s *connSlots) take() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n >= s.max {
		return false
	}
	s.n++
	return true
}

func (s *connSlots) give() {
	s.mu.Lock()
	s.n--
	s.mu.Unlock()
}

// serveProxy serves proxy on every connection l accepts until ctx ends (which closes l) or
// l is closed, and waits for the connections it served; a nil proxy refuses them all. A
// connection past run's or all's bound is closed at once, and the refusal noted. Accept
// failing (out of files) is tried again after a wait, growing to acceptBackoff.
func serveProxy(ctx context.Context, l net.Listener, proxy Proxy, f *refusals, run, all *connSlots) {
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	var conns sync.WaitGroup
	defer conns.Wait()
	wait := time.Duration(0)
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			wait = min(max(2*wait, 5*time.Millisecond), acceptBackoff)
			slog.Warn("sandbox: the proxy could not accept a connection; trying again", "err", err, "in", wait)
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			continue
		}
		wait = 0
		if !run.take() {
			c.Close()
			f.deny("", fmt.Sprintf("more than %d connections at once from one command", run.max))
			continue
		}
		if !all.take() {
			run.give()
			c.Close()
			f.deny("", fmt.Sprintf("more than %d connections at once from the sandbox's commands", all.max))
			continue
		}
		conns.Go(func() {
			defer run.give()
			defer all.give()
			defer c.Close()
			stopConn := context.AfterFunc(ctx, func() { c.Close() })
			defer stopConn()
			if proxy == nil {
				f.deny("", "no network was configured for the sandbox")
				return
			}
			proxy.ServeConn(ctx, c, f.deny)
		})
	}
}
