package team

import (
	"context"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/fscoord"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/waittest"
)

// recorder collects what a team emits.
type recorder struct {
	mu  sync.Mutex
	evs []event.Event
}

func (r *recorder) emit(e event.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, e)
}

func (r *recorder) from(name string) []event.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event.Event
	for _, e := range r.evs {
		if e.From().AgentName == name {
			out = append(out, e)
		}
	}
	return out
}

// openWorker opens a worker process's handle on dir publishing as member, with its record.
func openWorker(t *testing.T, dir, member string) *Team {
	t.Helper()
	be, err := fscoord.Open(dir, fscoord.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := Open(t.Context(), Config{Name: "crew", Backend: be})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close(); _ = be.Close() })
	now := time.Now()
	if err := w.putRecord(t.Context(), Record{ID: "a00000000000000b1", Name: member, Runner: RunnerRemote, State: StateWorking,
		PID: w.pid, Host: "elsewhere", Heartbeat: now, Started: now}); err != nil {
		t.Fatal(err)
	}
	w.startPublishing(member)
	return w
}

// A worker's events reach its lead's handle in order, as the same events, deltas left out and
// oversize texts cut; what a member's log held before the lead opened is not replayed.
func TestRemoteEventsReachLead(t *testing.T) {
	dir := t.TempDir()
	o := event.Origin{AgentID: "a00000000000000b1", AgentName: "bob"}
	// bob was at work before the lead opened: that is history, not news.
	early := openWorker(t, dir, "bob")
	early.Publish(event.Notice{Origin: o, Level: "info", Text: "from before the lead"})
	be, _ := fscoord.Open(dir, fscoord.Options{})
	defer be.Close()
	waittest.Until(t, "bob's early event to be written", func() bool {
		last, _ := be.Events().Last(t.Context(), "bob")
		return last > 0
	})

	var got recorder
	openLeadAt(t, dir, Config{Lease: time.Minute, Emit: got.emit})
	w := openWorker(t, dir, "alice")
	a := event.Origin{AgentID: "a00000000000000a1", AgentName: "alice"}
	big := strings.Repeat("x", coord.DefaultLimits.MessageBytes)
	sent := []event.Event{
		event.TeammateState{Origin: a, Name: "alice", Color: "green", State: "working", Task: "3"},
		event.TextDelta{Origin: a, Text: "hel"},
		event.AssistantMessage{Origin: a, Message: message.Message{Role: message.RoleAssistant, Content: []message.Block{message.Text("hello")}}},
		event.ToolStart{Origin: a, ID: "t1", Name: "Bash", Input: []byte(`{"command":"cat big"}`)},
		event.ToolEnd{Origin: a, ID: "t1", Name: "Bash", Result: []message.Block{message.Text(big)}},
		event.TeamMessage{Origin: a, ID: "m1", Sender: "alice", Recipient: "team-lead", Summary: "done", Text: "task 3 is done"},
	}
	for _, e := range sent {
		w.Publish(e)
	}
	early.Publish(event.Notice{Origin: o, Level: "info", Text: "after the lead opened"})
	waittest.Until(t, "alice's events at the lead", func() bool { return len(got.from("alice")) >= len(sent)-1 })
	waittest.Until(t, "bob's new event at the lead", func() bool { return len(got.from("bob")) >= 1 })

	evs := got.from("alice")
	var kinds []string
	for _, e := range evs {
		switch v := e.(type) {
		case event.TextDelta:
			t.Error("a text delta was streamed")
		case event.ToolEnd:
			if n := len(v.Result[0].Text); n >= len(big) || !strings.Contains(v.Result[0].Text, "more bytes") {
				t.Errorf("an oversize tool result reached the lead with %d bytes, not cut", n)
			}
		case event.TeammateState:
			if v.State != "working" || v.Task != "3" || v.Color != "green" {
				t.Errorf("state arrived as %+v", v)
			}
		case event.TeamMessage:
			if v.Recipient != LeadAlias || v.Text != "task 3 is done" {
				t.Errorf("message arrived as %+v", v)
			}
		}
		kinds = append(kinds, typeName(e))
	}
	want := "TeammateState AssistantMessage ToolStart ToolEnd TeamMessage"
	if strings.Join(kinds, " ") != want {
		t.Errorf("alice's events at the lead: %v, want %s", kinds, want)
	}
	for _, e := range got.from("bob") {
		if n, ok := e.(event.Notice); !ok || n.Text != "after the lead opened" {
			t.Errorf("bob's event at the lead: %+v; only what came after the lead opened should be shown", e)
		}
	}
}

func typeName(e event.Event) string {
	switch e.(type) {
	case event.TeammateState:
		return "TeammateState"
	case event.AssistantMessage:
		return "AssistantMessage"
	case event.ToolStart:
		return "ToolStart"
	case event.ToolEnd:
		return "ToolEnd"
	case event.TeamMessage:
		return "TeamMessage"
	case event.TextDelta:
		return "TextDelta"
	}
	return "other"
}

// A worker's last events still reach the log when its session ends at once.
func TestPublisherFlushesOnClose(t *testing.T) {
	dir := t.TempDir()
	w := openWorker(t, dir, "alice")
	a := event.Origin{AgentID: "a00000000000000a1", AgentName: "alice"}
	for i := range 50 {
		w.Publish(event.Notice{Origin: a, Text: strings.Repeat("n", i)})
	}
	w.Publish(event.TeammateState{Origin: a, Name: "alice", State: "stopped"})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	be, _ := fscoord.Open(dir, fscoord.Options{})
	defer be.Close()
	es, err := be.Events().Read(context.Background(), "alice", 0, 0)
	if err != nil || len(es) != 51 {
		t.Fatalf("the log holds %d entries (%v), want 51", len(es), err)
	}
	last, err := event.Decode(es[50].Data)
	if s, ok := last.(event.TeammateState); err != nil || !ok || s.State != "stopped" {
		t.Errorf("the last entry is %+v (%v), want the stopped state", last, err)
	}
}

// A member that dies in another process says nothing; the lead's UI hears it from the lead.
func TestLeadTellsOfADeadRemoteMember(t *testing.T) {
	var got recorder
	tm := openLeadAt(t, t.TempDir(), Config{Lease: time.Minute, Emit: got.emit})
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := tm.putRecord(t.Context(), Record{ID: "a00000000000000c1", Name: "carol", Color: "pink", Runner: RunnerProcess, State: StateWorking,
		Task: "2", PID: gone.Process.Pid, Host: tm.host, Heartbeat: now, Started: now}); err != nil {
		t.Fatal(err)
	}
	waittest.Until(t, "carol's death at the lead", func() bool {
		for _, e := range got.from("carol") {
			if s, ok := e.(event.TeammateState); ok && s.State == "dead" && s.Task == "2" && s.Origin.AgentID == "a00000000000000c1" {
				return true
			}
		}
		return false
	})
}
