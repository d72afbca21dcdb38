package otelexport_test

import (
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/telemetry"
	"github.com/keel-dev/keel/internal/telemetry/oteltest"
)

// Mail latency: each message read adds, to keel.team.message.latency, the time from its
// sending to its reading, by message type; a read that a skewed clock puts before the send
// counts as no wait.
func TestMailLatency(t *testing.T) {
	recv := oteltest.Start(t)
	at := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	lines := []telemetry.Line{{At: at, Session: &telemetry.SessionInfo{SessionID: "s-1", Version: "1.2.3", StartType: "fresh"}}}
	read := func(e event.TeamMessageRead) {
		data, err := event.Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, telemetry.Line{At: at, Event: data})
	}
	alice := event.Origin{AgentID: "mate-1", AgentName: "alice"}
	read(event.TeamMessageRead{Origin: alice, ID: "m1", Sender: "team-lead", Recipient: "alice", Sent: at.Add(-1500 * time.Millisecond)})
	read(event.TeamMessageRead{ID: "m2", Sender: "alice", Recipient: "team-lead", Type: "shutdown_response", Sent: at.Add(-250 * time.Millisecond)})
	read(event.TeamMessageRead{Origin: alice, ID: "m3", Sender: "bob", Recipient: "alice", Sent: at.Add(time.Second)})
	read(event.TeamMessageRead{Origin: alice, ID: "m4", Sender: "bob", Recipient: "alice"}) // no send time: not measured
	record(t, config(t, "grpc", recv.GRPCEndpoint(), false), lines)
	d := recv.Data()
	points := d.Points("keel.team.message.latency")
	if len(points) == 0 || points[0].Unit != "s" {
		t.Fatalf("keel.team.message.latency points %+v, want some in seconds", points)
	}
	for typ, want := range map[string]float64{"message": 1.5, "shutdown_response": 0.25} {
		if got := d.Sum("keel.team.message.latency", map[string]string{"type": typ}); got != want {
			t.Errorf("latency of %s messages: %v s, want %v", typ, got, want)
		}
	}
}
