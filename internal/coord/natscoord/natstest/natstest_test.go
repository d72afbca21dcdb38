package natstest_test

import (
	"slices"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/keel-dev/keel/internal/coord/natscoord/natsserver"
	"github.com/keel-dev/keel/internal/coord/natscoord/natstest"
	"github.com/keel-dev/keel/internal/waittest"
)

// A cluster is handed over once its meta leader can place on every node: a stream with a
// replica on each is created at once (before the wait for it, 4 starts in 150 under -race
// failed here with "no suitable peers for placement").
func TestClusterPlacesOnEveryNode(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	nc, err := nats.Connect(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(waittest.Context(t), jetstream.StreamConfig{Name: "r3", Subjects: []string{"r3"}, Replicas: 3}); err != nil {
		t.Fatalf("create a stream with 3 replicas right after the cluster started: %v", err)
	}
}

// Only the meta leader reports the meta group, naming every node, itself included; a node
// that dies is soon offline to the leader and no longer placeable.
func TestMetaGroup(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	leader := -1
	var g natsserver.MetaGroup
	for i := range 3 {
		if mg, ok := c.Node(i).MetaGroup(); ok {
			if leader >= 0 {
				t.Fatalf("nodes %d and %d both report the meta group", leader, i)
			}
			leader, g = i, mg
		}
	}
	if leader < 0 {
		t.Fatal("no node reports the meta group")
	}
	if g.Leader != c.Node(leader).Name() || g.Size != 3 {
		t.Errorf("meta group %+v: want leader %s, size 3", g, c.Node(leader).Name())
	}
	var names []string
	for _, p := range g.Peers {
		names = append(names, p.Name)
		if !p.Current || p.Offline {
			t.Errorf("peer %+v of a started cluster: want current and online", p)
		}
	}
	slices.Sort(names)
	placeable := slices.Sorted(slices.Values(g.Placeable))
	if want := []string{"n1", "n2", "n3"}; !slices.Equal(names, want) || !slices.Equal(placeable, want) {
		t.Errorf("peers %v, placeable %v: want %v for both", names, placeable, want)
	}

	victim := (leader + 1) % 3
	gone := c.Node(victim).Name()
	c.Kill(victim)
	waittest.Until(t, gone+" offline and not placeable", func() bool {
		for i := range 3 {
			if i == victim {
				continue
			}
			if g, ok := c.Node(i).MetaGroup(); ok {
				for _, p := range g.Peers {
					if p.Name == gone && p.Offline && !slices.Contains(g.Placeable, gone) {
						return true
					}
				}
			}
		}
		return false
	})
}
