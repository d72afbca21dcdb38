// Command keel-nats is keel's NATS companion. Without a subcommand it is the keel
// supervisor's embedded nats-server: the official server as a library, JetStream on,
// listening on loopback only. `keel-nats coord` serves one team's store on a NATS server to
// keel over its stdin and stdout (coordpipe), so that keel links neither the server nor the
// NATS client: every keel process would pay for their package init and pages, though few
// runs have a team on NATS.
//
// Once JetStream is ready it prints one JSON line on stdout, {"url": "nats://127.0.0.1:PORT"},
// and logs to stderr as JSON lines (log/slog). It stops, flushing its store, when its stdin
// is closed (so it never outlives the process that started it) or on SIGTERM or SIGINT.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/keel-dev/keel/internal/coord/natscoord/natsserver"
)

const usage = `usage: keel-nats --store DIR [flags]
       keel-nats coord


Runs the nats-server that the keel supervisor uses when coordination.backend is "nats" with
no url: JetStream on, loopback only. Prints {"url": ...} on stdout once JetStream is ready,
logs to stderr, and stops when stdin is closed or on SIGTERM/SIGINT.

keel-nats coord serves a team's store on a NATS server to keel over stdin and stdout (see
keel-nats coord --help): keel reaches NATS through it.

flags:
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

type config struct {
	store, name, host string
	port              int
	portFallback      bool
	stdinLifeline     bool
	debug             bool
}

func parse(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("keel-nats", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	fs.StringVar(&c.store, "store", "", "directory of JetStream's file store (required)")
	fs.StringVar(&c.name, "name", "keel", "the server's name")
	fs.StringVar(&c.host, "host", "127.0.0.1", "loopback address to listen on (127.0.0.0/8 or ::1)")
	fs.IntVar(&c.port, "port", 0, "client port; 0 picks a free one")
	fs.BoolVar(&c.portFallback, "port-fallback", false, "when --port is taken, listen on a free port instead of failing")
	fs.BoolVar(&c.stdinLifeline, "stdin-lifeline", true, "stop when stdin is closed; false to run on its own until a signal")
	fs.BoolVar(&c.debug, "debug", false, "log the server's debug messages")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case c.store == "":
		return c, errors.New("--store DIR is required")
	case c.port < 0 || c.port > 65535:
		return c, fmt.Errorf("--port %d: want 0 to 65535", c.port)
	}
	// The embedded server has no authentication: it is for the processes of one machine.
	if ip := net.ParseIP(c.host); ip == nil || !ip.IsLoopback() {
		return c, fmt.Errorf("--host %q: want a loopback address (127.0.0.1, ::1); for a server other hosts reach, run nats-server itself", c.host)
	}
	return c, nil
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "coord" {
		return runCoord(args[1:], stdin, stdout, stderr)
	}
	c, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "keel-nats: %v (see keel-nats --help)\n", err)
		return 2
	}
	level := slog.LevelInfo
	if c.debug {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := serve(ctx, c, stdin, stdout, logger); err != nil {
		logger.Error("keel-nats", "err", err)
		return 1
	}
	return 0
}

// serve runs the server until ctx ends or, with the lifeline, stdin reaches its end.
func serve(ctx context.Context, c config, stdin io.Reader, stdout io.Writer, logger *slog.Logger) error {
	if err := os.MkdirAll(c.store, 0o700); err != nil {
		return fmt.Errorf("store directory: %w", err)
	}
	opts := natsserver.Options{Name: c.name, Host: c.host, Port: c.port, StoreDir: c.store, SyncAlways: true, Logger: logger}
	srv, err := natsserver.Start(opts)
	if err != nil && c.port != 0 && c.portFallback {
		logger.Warn("port unavailable; listening on a free one", "port", c.port, "err", err)
		opts.Port = 0
		srv, err = natsserver.Start(opts)
	}
	if err != nil {
		return err
	}
	defer func() {
		srv.Shutdown()
		logger.Info("nats-server stopped")
	}()
	if err := srv.WaitJetStream(ctx); err != nil {
		return err
	}
	if err := json.NewEncoder(stdout).Encode(struct {
		URL string `json:"url"`
	}{srv.URL()}); err != nil {
		return fmt.Errorf("report the URL: %w", err)
	}
	closed := make(chan struct{})
	if c.stdinLifeline {
		go func() {
			_, _ = io.Copy(io.Discard, stdin)
			close(closed)
		}()
	}
	select {
	case <-ctx.Done():
		logger.Info("signalled; stopping")
	case <-closed:
		logger.Info("stdin closed; stopping")
	}
	return nil
}
