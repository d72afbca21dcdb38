// Package natstest starts real nats-servers for tests: one in-process server with JetStream on
// a random 127.0.0.1 port and its store in t.TempDir(), or a cluster of several, whose nodes a
// test can kill to see claims and deliveries continue. No mocks: the official server as a
// library.
package natstest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/keel-dev/keel/internal/coord/natscoord/natsserver"
	"github.com/keel-dev/keel/internal/porttest"
	"github.com/keel-dev/keel/internal/waittest"
)

// Start runs one server for the test; it stops when the test ends.
func Start(t testing.TB) *natsserver.Server {
	t.Helper()
	s, err := natsserver.Start(natsserver.Options{Name: "test", StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

// Cluster is a JetStream cluster of in-process servers.
type Cluster struct {
	// mu guards nodes.
	mu    sync.Mutex
	nodes []*natsserver.Server
	urls  []string
}

// StartCluster runs n servers routed to each other and waits until JetStream's meta leader
// can place a stream's replicas on every one of them; they stop when the test ends.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	// A JetStream cluster wants its routes configured from the start, so the route ports are
	// picked before any node starts (porttest: outside the range the kernel hands out to the
	// first nodes' own connections).
	var routes []string
	ports := make([]int, n)
	for i := range n {
		ports[i] = porttest.Free(t)
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[i]))
	}
	c := &Cluster{}
	for i := range n {
		s, err := natsserver.Start(natsserver.Options{
			Name:     fmt.Sprintf("n%d", i+1),
			StoreDir: t.TempDir(),
			Cluster:  &natsserver.ClusterOptions{Name: "keeltest", Port: ports[i], Routes: routes},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Shutdown)
		c.nodes = append(c.nodes, s)
		c.urls = append(c.urls, s.URL())
	}
	ctx := waittest.Context(t)
	for _, s := range c.nodes {
		if err := s.WaitJetStream(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.waitPeers(ctx, n); err != nil {
		t.Fatal(err)
	}
	return c
}

// waitPeers waits until the meta leader, whichever node it is, knows n servers, each current,
// online and placeable. A node's JetStream is ready once it follows a leader, but the leader
// may not yet have heard every other node's statistics (nor its own), and until it has, a
// stream with n replicas finds "no suitable peers for placement".
func (c *Cluster) waitPeers(ctx context.Context, n int) error {
	var last natsserver.MetaGroup
	if waittest.Poll(ctx, func() bool {
		for _, s := range c.nodes {
			if g, ok := s.MetaGroup(); ok {
				last = g
				return allPeers(g, n)
			}
		}
		return false
	}) {
		return nil
	}
	return fmt.Errorf("wait for the meta leader to place on all %d nodes (last seen: %+v): %w", n, last, context.Cause(ctx))
}

// allPeers reports whether g knows n servers, all current, online and placeable.
func allPeers(g natsserver.MetaGroup, n int) bool {
	if g.Size != n || len(g.Peers) != n || len(g.Placeable) != n {
		return false
	}
	for _, p := range g.Peers {
		if !p.Current || p.Offline || !slices.Contains(g.Placeable, p.Name) {
			return false
		}
	}
	return true
}

// URL lists every node's client URL, comma-separated, as nats.go takes them.
func (c *Cluster) URL() string { return strings.Join(c.urls, ",") }

// Node returns node i.
func (c *Cluster) Node(i int) *natsserver.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i]
}

// Kill stops node i abruptly for the others: its connections drop and it leaves the cluster.
func (c *Cluster) Kill(i int) {
	c.Node(i).Shutdown()
}

// Restartable is one server a test can stop and start again at the same address with the
// same store, to see clients ride out an outage.
type Restartable struct {
	t    testing.TB
	opts natsserver.Options
	// mu guards cur.
	mu  sync.Mutex
	cur *natsserver.Server
	url string
}

// StartRestartable runs a server on a free port that [Restartable.Start] reuses (porttest:
// outside the range the kernel hands out to the clients' reconnections while it is down).
func StartRestartable(t testing.TB) *Restartable {
	t.Helper()
	r := &Restartable{t: t, opts: natsserver.Options{Name: "test", StoreDir: t.TempDir(), Port: porttest.Free(t)}}
	r.Start()
	t.Cleanup(r.Stop)
	return r
}

// URL is the server's client URL; the same across restarts.
func (r *Restartable) URL() string { return r.url }

// Stop shuts the server down; clients see their connections drop.
func (r *Restartable) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur != nil {
		r.cur.Shutdown()
		r.cur = nil
	}
}

// Start starts the server again (or the first time).
func (r *Restartable) Start() {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur != nil {
		return
	}
	s, err := natsserver.Start(r.opts)
	if err != nil {
		r.t.Fatal(err)
	}
	r.cur, r.url = s, s.URL()
}
