package acp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/keel-dev/keel"
)

// Config configures a server.
type Config struct {
	// In and Out are the client's streams: messages arrive on In, one per line, and every
	// response and notification goes to Out. Nothing else may write to Out.
	In  io.Reader
	Out io.Writer
	// Options are the options of every session the client opens; the server sets Cwd, the
	// client's MCP servers, Ask, Resume and ForkSession per session.
	Options keel.Options
	// Version is keel's version, reported in initialize.
	Version string
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
}

// Run serves one client until In ends (the editor closed the connection) or ctx does. Then
// the turns still running are interrupted, their commands killed, and every session is closed
// with its transcript synced, before Run returns.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	out := &lockedWriter{w: cfg.Out}
	g := &guard{out: out, logger: cfg.Logger}
	a := newAgent(cfg, g)
	// No message is let through before the connection is whole: the SDK starts reading in
	// its constructor, and a handler must see a.conn and the logger already set.
	ready := make(chan struct{})
	conn := sdk.NewAgentSideConnection(a, out, g.pipe(cfg.In, ready))
	conn.SetLogger(cfg.Logger)
	a.conn = conn
	close(ready)
	select {
	case <-conn.Done():
	case <-ctx.Done():
	}
	return a.shutdown()
}

// shutdown closes every session: each running turn is interrupted and waited for first.
func (a *agent) shutdown() error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, s := range a.stop() {
		wg.Go(func() {
			if err := s.close(); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
