package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"syscall"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/coordpipe"
	"github.com/keel-dev/keel/internal/coord/natscoord"
)

const coordUsage = `usage: keel-nats coord

Serves one team's coordination store on NATS JetStream to keel, over stdin and stdout: keel
reaches NATS through it, so that the keel binary does not link the NATS client. The first
line on stdin says what to open (coordpipe.NATS: url, credsFile, caFile, certFile, keyFile,
replicas, name, team; or list and listKey for the teams of the server); then requests and
answers follow as JSON lines. It stops when stdin is closed.
`

// runCoord is `keel-nats coord`.
func runCoord(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
			fmt.Fprint(stderr, coordUsage)
			return 0
		}
		fmt.Fprintf(stderr, "keel-nats coord: unexpected argument %q (see keel-nats coord --help)\n", args[0])
		return 2
	}
	// keel handles Ctrl-C itself (it interrupts a turn and goes on), and the terminal sends
	// SIGINT to its whole process group: this companion lives until keel closes its stdin.
	signal.Ignore(syscall.SIGINT)
	logger := slog.New(slog.NewJSONHandler(stderr, nil))
	if err := serveCoord(context.Background(), stdin, stdout, logger); err != nil {
		logger.Error("keel-nats coord", "err", err)
		return 1
	}
	return 0
}

// serveCoord opens what the first line asks for and serves it until stdin ends.
func serveCoord(ctx context.Context, stdin io.Reader, stdout io.Writer, logger *slog.Logger) error {
	srv := coordpipe.NewServer(stdin, stdout)
	var o coordpipe.NATS
	if err := srv.ReadOpen(&o); err != nil {
		srv.Fail(err)
		return err
	}
	// Opening retries an unreachable server until its context ends: it ends with keel.
	openCtx, cancel := srv.Context(ctx)
	defer cancel()
	opts := natscoord.Options{
		Config: coord.Config{Limits: o.Limits, Logger: logger},
		URL:    o.URL, Team: o.Team, CredsFile: o.CredsFile, Replicas: o.Replicas, Name: o.Name,
		TLS: natscoord.TLS{CAFile: o.CAFile, CertFile: o.CertFile, KeyFile: o.KeyFile},
		OnState: func(st natscoord.State) {
			srv.State(coordpipe.State{Connected: st.Connected, URL: st.URL, Err: st.Err})
		},
	}
	if o.List {
		teams, err := natscoord.ListTeams(openCtx, opts, o.ListKey)
		if err != nil {
			srv.Fail(err)
			return nil
		}
		return srv.Reply(teams)
	}
	be, err := natscoord.Open(openCtx, opts)
	if err != nil {
		srv.Fail(err)
		return nil
	}
	return srv.Serve(ctx, be)
}
