// Package natsserver runs the official nats-server as a library, JetStream on. Only the
// keel-nats binary (the supervisor's local broker) and tests import it: linking the server
// into keel itself would make every keel process pay for its package init and pages, though
// only the supervisor runs one. natscoord, the client backend, stays free of it.
package natsserver

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Options configure an embedded nats-server. keel-nats runs one for the supervisor, so that
// one machine gets durable coordination with nothing else to install; tests run one (or a
// cluster of three) in-process.
type Options struct {
	// Name identifies the server; unique within a cluster. Empty: "keel".
	Name string
	// Host is the address clients connect to; empty is 127.0.0.1. The embedded server is
	// meant for one machine: only a caller that means it listens on anything else.
	Host string
	// Port for clients; 0 picks a free one (see [Server.URL]).
	Port int
	// StoreDir holds JetStream's file store; required.
	StoreDir string
	// SyncAlways makes the file store fsync every write. JetStream otherwise fsyncs every
	// two minutes: a kill -9 of the server loses nothing (the kernel has the pages), a power
	// loss could lose the last two minutes.
	SyncAlways bool
	// Cluster, when set, joins a JetStream cluster.
	Cluster *ClusterOptions
	// TLS, when set, makes clients connect with TLS (tls:// URLs).
	TLS *tls.Config
	// Logger receives the server's log; nil discards it.
	Logger *slog.Logger
}

// ClusterOptions place an embedded server in a cluster.
type ClusterOptions struct {
	// Name is the cluster's name, the same on every node.
	Name string
	// Port is where routes from other nodes arrive; 0 picks a free one.
	Port int
	// Routes are the other nodes' route URLs (nats://host:port).
	Routes []string
}

// Server is a running embedded nats-server.
type Server struct {
	srv  *server.Server
	opts Options
}

// Start starts an embedded nats-server and waits until it accepts connections.
func Start(opts Options) (*Server, error) {
	if opts.StoreDir == "" {
		panic("natsserver.Start: no StoreDir")
	}
	if opts.Name == "" {
		opts.Name = "keel"
	}
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	port := opts.Port
	if port == 0 {
		port = server.RANDOM_PORT
	}
	so := &server.Options{
		ServerName: opts.Name,
		Host:       opts.Host,
		Port:       port,
		JetStream:  true,
		StoreDir:   opts.StoreDir,
		SyncAlways: opts.SyncAlways,
		NoSigs:     true,
		// No HTTP monitoring, no leaf nodes, no gateways: a client port (and a route port in
		// a cluster) and nothing else.
		HTTPPort: 0,
	}
	if opts.TLS != nil {
		so.TLSConfig, so.TLS, so.TLSTimeout = opts.TLS, true, 5
	}
	if c := opts.Cluster; c != nil {
		cport := c.Port
		if cport == 0 {
			cport = server.RANDOM_PORT
		}
		so.Cluster = server.ClusterOpts{Name: c.Name, Host: opts.Host, Port: cport}
		for _, r := range c.Routes {
			u, err := url.Parse(r)
			if err != nil {
				return nil, fmt.Errorf("start nats-server %s: route %q: %w", opts.Name, r, err)
			}
			so.Routes = append(so.Routes, u)
		}
	}
	srv, err := server.NewServer(so)
	if err != nil {
		return nil, fmt.Errorf("start nats-server %s: %w", opts.Name, err)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// A listener that fails (a port taken) is reported only through the log's Fatalf; the
	// server's own readiness wait would just run out.
	fatal := make(chan string, 1)
	srv.SetLoggerV2(serverLog{l: logger.With("component", "nats-server", "server", opts.Name), fatal: fatal}, false, false, false)
	srv.Start()
	addr := net.JoinHostPort(opts.Host, strconv.Itoa(opts.Port))
	deadline := time.Now().Add(30 * time.Second)
	for !srv.ReadyForConnections(50 * time.Millisecond) {
		select {
		case msg := <-fatal:
			srv.Shutdown()
			return nil, fmt.Errorf("start nats-server %s on %s: %s", opts.Name, addr, msg)
		default:
		}
		if time.Now().After(deadline) {
			srv.Shutdown()
			return nil, fmt.Errorf("start nats-server %s on %s: not ready after 30s", opts.Name, addr)
		}
	}
	return &Server{srv: srv, opts: opts}, nil
}

// URL is where clients connect (nats://127.0.0.1:port).
func (s *Server) URL() string { return s.srv.ClientURL() }

// Name is the server's name.
func (s *Server) Name() string { return s.opts.Name }

// ClusterURL is where other nodes route to; empty when the server is not clustered.
func (s *Server) ClusterURL() string {
	a := s.srv.ClusterAddr()
	if a == nil {
		return ""
	}
	return "nats://" + a.String()
}

// JetStreamReady reports whether JetStream can serve requests: standalone, at once; in a
// cluster, once the nodes have elected a meta leader and this node follows it.
func (s *Server) JetStreamReady() bool {
	if !s.srv.JetStreamEnabled() {
		return false
	}
	if s.opts.Cluster == nil {
		return true
	}
	return s.srv.JetStreamIsCurrent()
}

// WaitJetStream waits until [Server.JetStreamReady] or ctx ends.
func (s *Server) WaitJetStream(ctx context.Context) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !s.JetStreamReady() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for JetStream on %s: %w", s.opts.Name, context.Cause(ctx))
		case <-tick.C:
		}
	}
	return nil
}

// MetaPeer is one server of JetStream's meta group as the meta leader sees it.
type MetaPeer struct {
	Name string
	// Current: caught up with the leader's log and heard from lately.
	Current bool
	// Offline: the leader has not heard from it lately, or heard it shut down.
	Offline bool
}

// MetaGroup is JetStream's meta group (the one that places streams on servers) as its
// leader sees it.
type MetaGroup struct {
	Leader string
	// Size is the cluster's size as the group knows it.
	Size int
	// Peers are the servers the leader knows of, itself included, by name.
	Peers []MetaPeer
	// Placeable names the peers the leader would place a stream's replicas on: online, with
	// JetStream, and whose statistics (storage, limits) it has received. A peer can be
	// current in the group before its statistics arrive, and until they do a stream with as
	// many replicas as there are servers fails with "no suitable peers for placement".
	Placeable []string
}

// MetaGroup reports the meta group when this node is its leader; ok is false on a follower,
// a standalone server, or while there is no leader: only the leader's view of its peers is
// the one placement goes by.
func (s *Server) MetaGroup() (g MetaGroup, ok bool) {
	if s.opts.Cluster == nil || !s.srv.JetStreamIsLeader() {
		return MetaGroup{}, false
	}
	jsz, err := s.srv.Jsz(&server.JSzOptions{})
	if err != nil || jsz.Meta == nil || jsz.Meta.Leader != s.opts.Name {
		return MetaGroup{}, false
	}
	m := jsz.Meta
	g = MetaGroup{Leader: m.Leader, Size: m.Size, Placeable: s.srv.JetStreamClusterPeers()}
	// The leader leaves itself out of the replicas it lists.
	g.Peers = append(g.Peers, MetaPeer{Name: m.Leader, Current: true})
	for _, p := range m.Replicas {
		g.Peers = append(g.Peers, MetaPeer{Name: p.Name, Current: p.Current, Offline: p.Offline})
	}
	return g, true
}

// Shutdown stops the server and waits until it has stopped; JetStream's store is flushed.
func (s *Server) Shutdown() {
	s.srv.Shutdown()
	s.srv.WaitForShutdown()
}

// serverLog adapts slog to the server's logger; the first fatal message also goes to fatal.
type serverLog struct {
	l     *slog.Logger
	fatal chan<- string
}

func (s serverLog) Noticef(format string, v ...any) { s.l.Info(fmt.Sprintf(format, v...)) }
func (s serverLog) Warnf(format string, v ...any)   { s.l.Warn(fmt.Sprintf(format, v...)) }
func (s serverLog) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	s.l.Error(msg)
	select {
	case s.fatal <- msg:
	default:
	}
}
func (s serverLog) Errorf(format string, v ...any) { s.l.Error(fmt.Sprintf(format, v...)) }
func (s serverLog) Debugf(format string, v ...any) { s.l.Debug(fmt.Sprintf(format, v...)) }
func (s serverLog) Tracef(format string, v ...any) { s.l.Debug(fmt.Sprintf(format, v...)) }
