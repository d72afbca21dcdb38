package session

import (
	"testing"

	"github.com/keel-dev/keel/internal/event"
)

// TestAgentEventAfterTheRunEndedIsHeld: a background agent's event that reaches the session
// just as its run ends — the run's sink still set, but closed — is held for the next Send,
// where it is replayed as already seen by telemetry (which observed it when it happened),
// not dropped.
func TestAgentEventAfterTheRunEndedIsHeld(t *testing.T) {
	s := &Session{agents: &Agents{}}
	ended := make(chan sinkEvent, 1)
	s.sink = &chanSink{s: s, ch: ended}
	s.sink.close()
	late := event.Notice{Level: "info", Text: "alice finished"}
	s.emitAgent(late)
	if len(s.agents.held) != 1 {
		t.Fatalf("held %d events after the run ended, want the late one", len(s.agents.held))
	}

	next := make(chan sinkEvent, 2)
	s.agents.replayHeld(&chanSink{s: s, ch: next})
	select {
	case m := <-next:
		if m.e != late || !m.observed {
			t.Errorf("replayed %+v (observed %v), want the late event, already observed", m.e, m.observed)
		}
	default:
		t.Fatal("the next Send did not get the held event")
	}
}
