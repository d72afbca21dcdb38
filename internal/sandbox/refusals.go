package sandbox

import (
	"context"
	"net"
	"slices"
	"sync"
)

// refusals are the connections a run's proxy refused, each once, as "host: why".
type refusals struct {
	mu   sync.Mutex
	list []string
}

func (f *refusals) deny(host, why string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	note := why
	if host != "" {
		note = host + ": " + why
	}
	if !slices.Contains(f.list, note) {
		f.list = append(f.list, note)
	}
}

func (f *refusals) all() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.list)
}

// serveProxy serves proxy on every connection l accepts until ctx ends (which closes l) or
// l is closed, and waits for the connections it served; a nil proxy refuses them all.
func serveProxy(ctx context.Context, l net.Listener, proxy Proxy, f *refusals) {
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	var conns sync.WaitGroup
	defer conns.Wait()
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		conns.Go(func() {
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
