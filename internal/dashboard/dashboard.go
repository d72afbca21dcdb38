// Package dashboard is keel's local web frontend: one page, served by keel from embedded
// assets, that shows the sessions of this machine with their cost and cache economy, teams
// (members, the task board, mail, permission requests waiting), background agents and
// supervisor jobs, updating live over server-sent events. It reads the records keel writes —
// transcripts, the coordination backend, the supervisor's job records — and holds no state of
// its own, and it acts where the terminal UI can: it answers a teammate's permission request,
// stops a background agent, messages a teammate.
//
// It listens on loopback by default; every request needs the random token of the URL it
// prints (403 without), and requests whose Host or Origin is not the dashboard's own are
// refused, so a web page elsewhere cannot reach it through DNS rebinding.
package dashboard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// Config configures a dashboard.
type Config struct {
	// Home is keel's directory ($KEEL_HOME): sessions are read under Home/projects.
	Home string
	// Teams, Jobs may be nil: those parts of the page stay empty.
	Teams Teams
	Jobs  Jobs
	// Token is the secret every request must carry; empty makes a random one.
	Token string
	// Interval is how often the records are read for changes when no watch says so; 0 is
	// 250ms.
	Interval time.Duration
	Logger   *slog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Server is a running dashboard.
type Server struct {
	cfg    Config
	ln     net.Listener
	srv    *http.Server
	hub    *hub
	logger *slog.Logger
	allow  allowed

	wg     sync.WaitGroup
	cancel context.CancelFunc
	// stopping is closed when Serve's context ends: open event streams return, so the
	// server's shutdown need not wait for their clients to go.
	stopping chan struct{}
}

// Listen starts a dashboard on addr ("127.0.0.1:0" picks a free loopback port). Serve it with
// [Server.Serve]; [Server.URL] is the address to open, token included.
func Listen(ctx context.Context, addr string, cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 250 * time.Millisecond
	}
	if cfg.Token == "" {
		b := make([]byte, 24)
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("make the dashboard token: %w", err)
		}
		cfg.Token = hex.EncodeToString(b)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dashboard: listen on %s: %w", addr, err)
	}
	s := &Server{cfg: cfg, ln: ln, logger: cfg.Logger, allow: allowedHosts(ln.Addr().(*net.TCPAddr)), stopping: make(chan struct{})}
	s.hub = newHub(newCollector(cfg), cfg.Interval, cfg.Logger)
	s.srv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	return s, nil
}

// URL is the page's address with its token.
func (s *Server) URL() string {
	return "http://" + s.allow.canonical + "/?token=" + url.QueryEscape(s.cfg.Token)
}

// Addr is the address the dashboard listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve serves until ctx is done, then stops: open event streams end, the team handles
// close.
func (s *Server) Serve(ctx context.Context) error {
	ctx, s.cancel = context.WithCancel(ctx)
	s.wg.Go(func() { s.hub.run(ctx) })
	stop := context.AfterFunc(ctx, func() {
		close(s.stopping)
		shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = s.srv.Shutdown(shut)
	})
	defer stop()
	err := s.srv.Serve(s.ln)
	s.cancel()
	s.wg.Wait()
	s.hub.close()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Handler is the dashboard's HTTP handler, every route behind the guard.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.page)
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(assetFS())))
	mux.HandleFunc("GET /api/view", s.view)
	mux.HandleFunc("GET /api/events", s.events)
	mux.HandleFunc("GET /api/session", s.session)
	mux.HandleFunc("POST /api/answer", s.answer)
	mux.HandleFunc("POST /api/message", s.message)
	mux.HandleFunc("POST /api/stop", s.stop)
	return s.guard(mux)
}
