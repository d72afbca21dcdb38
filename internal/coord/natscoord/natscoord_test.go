package natscoord_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/coordtest"
	"github.com/keel-dev/keel/internal/coord/natscoord"
	"github.com/keel-dev/keel/internal/coord/natscoord/natstest"
	"github.com/keel-dev/keel/internal/waittest"
)

// TestConformance runs the coordination suite against a real nats-server; each subtest
// gets a team of its own on it.
func TestConformance(t *testing.T) {
	srv := natstest.Start(t)
	var n atomic.Int64
	coordtest.Run(t, func(t *testing.T) coordtest.Open {
		team := fmt.Sprintf("t%d", n.Add(1))
		return func(t *testing.T, cfg coord.Config) coord.Backend {
			t.Helper()
			b, err := natscoord.Open(waittest.Context(t), natscoord.Options{Config: cfg, URL: srv.URL(), Team: team})
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	})
}

// TestConformanceTeams: the teams of a NATS server are its keel state buckets.
func TestConformanceTeams(t *testing.T) {
	srv := natstest.Start(t)
	coordtest.RunTeams(t, func(t *testing.T) coordtest.OpenTeam {
		return func(t *testing.T, name string) coord.Backend {
			t.Helper()
			b, err := natscoord.Open(waittest.Context(t), natscoord.Options{URL: srv.URL(), Team: name})
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	})
}
