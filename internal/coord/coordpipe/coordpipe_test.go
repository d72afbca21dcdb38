package coordpipe_test

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/coordpipe"
	"github.com/keel-dev/keel/internal/coord/coordtest"
	"github.com/keel-dev/keel/internal/coord/fscoord"
	"github.com/keel-dev/keel/internal/coord/natscoord"
	"github.com/keel-dev/keel/internal/coord/natscoord/natstest"
	"github.com/keel-dev/keel/internal/waittest"
)

// piped serves be over an in-process pipe and returns a client of it: what keel and
// `keel-nats coord` do across a process boundary, minus the processes.
func piped(t *testing.T, be coord.Backend) *coordpipe.Client {
	t.Helper()
	toServer, fromClient := io.Pipe()
	toClient, fromServer := io.Pipe()
	srv := coordpipe.NewServer(toServer, fromServer)
	served := make(chan error, 1)
	go func() {
		err := srv.Serve(context.Background(), be)
		_ = fromServer.Close()
		served <- err
	}()
	c, err := coordpipe.Dial(waittest.Context(t), coordpipe.Conn{R: toClient, W: fromClient, Wait: func() error {
		return <-served
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestConformanceOverFS(t *testing.T) {
	coordtest.Run(t, func(t *testing.T) coordtest.Open {
		dir := t.TempDir()
		return func(t *testing.T, cfg coord.Config) coord.Backend {
			t.Helper()
			b, err := fscoord.Open(dir, fscoord.Options{Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			return piped(t, b)
		}
	})
}

func TestConformanceTeamsOverFS(t *testing.T) {
	coordtest.RunTeams(t, func(t *testing.T) coordtest.OpenTeam {
		dir := t.TempDir()
		return func(t *testing.T, name string) coord.Backend {
			t.Helper()
			b, err := fscoord.Open(filepath.Join(dir, name), fscoord.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return piped(t, b)
		}
	})
}

func TestConformanceOverNATS(t *testing.T) {
	srv := natstest.Start(t)
	coordtest.Run(t, func(t *testing.T) coordtest.Open {
		team := "t" + coord.NewID()[:8]
		return func(t *testing.T, cfg coord.Config) coord.Backend {
			t.Helper()
			b, err := natscoord.Open(waittest.Context(t), natscoord.Options{Config: cfg, URL: srv.URL(), Team: team})
			if err != nil {
				t.Fatal(err)
			}
			return piped(t, b)
		}
	})
}

func TestConformanceTeamsOverNATS(t *testing.T) {
	srv := natstest.Start(t)
	coordtest.RunTeams(t, func(t *testing.T) coordtest.OpenTeam {
		return func(t *testing.T, name string) coord.Backend {
			t.Helper()
			b, err := natscoord.Open(waittest.Context(t), natscoord.Options{URL: srv.URL(), Team: name})
			if err != nil {
				t.Fatal(err)
			}
			return piped(t, b)
		}
	})
}
