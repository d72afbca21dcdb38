package session

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/team"
	"github.com/keel-dev/keel/internal/waittest"
)

// TestMailToAStoppingMemberIsRefusedAndAcceptedMailDrained: a note sent to alice while she
// works is read before she stops, though the lead asked her to stop meanwhile; a note sent
// once the lead asked is refused with an error that says so — never accepted and left unread.
func TestMailToAStoppingMemberIsRefusedAndAcceptedMailDrained(t *testing.T) {
	gate := make(chan struct{})
	alice := func(m scripted.Match) scripted.Match { m.System = mateIs("alice").System; return m }
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "alice works", When: alice(scripted.Match{UserText: "work slowly"}), Fault: &scripted.Fault{Hold: gate}, Reply: []scripted.Block{scripted.Text("worked")}},
		{Name: "alice reads the note", When: alice(scripted.Match{Contains: "note-before-shutdown"}), Reply: []scripted.Block{scripted.Text("got the note")}},
		{Name: "alice other", When: alice(scripted.Match{}), Reply: []scripted.Block{scripted.Text("ok")}},
		{Name: "lead spawns", When: leadTurn(scripted.Match{UserText: "start"}), Reply: []scripted.Block{
			scripted.ToolUse("Agent", map[string]any{"description": "worker", "prompt": "work slowly", "name": "alice"})}},
		{Name: "lead waits", When: leadTurn(scripted.Match{ToolResult: "Agent"}), Reply: []scripted.Block{scripted.Text("alice is on it")}},
	}, Fallback: &scripted.Rule{Reply: []scripted.Block{scripted.Text("ok")}}}
	h := newHarness(t, sc, Options{Team: TeamOptions{Enabled: true, Lease: waittest.Scale(2 * time.Second), ShutdownTimeout: waittest.Timeout()}})
	if r := result(t, h.send(t, "start")); r.Text != "alice is on it" {
		t.Fatalf("the lead's turn: %+v", r)
	}
	tm := h.sess.Team().Current()
	ctx := waittest.Context(t)
	if _, err := tm.SendFromUser(ctx, "alice", "note-before-shutdown"); err != nil {
		t.Fatalf("a note to a working member: %v", err)
	}
	shut := make(chan error, 1)
	// The shutdown lives across the steps below, each with its own time limit (waittest.Recv
	// bounds its end).
	go func() { shut <- tm.Shutdown(t.Context(), "done") }()
	ctx = waittest.Context(t)
	waittest.Until(t, "alice's record to say she is stopping", func() bool {
		rec, err := tm.Backend().Records().Get(ctx, "members/alice")
		var r team.Record
		return err == nil && json.Unmarshal(rec.Value, &r) == nil && r.Stopping
	})
	_, err := tm.SendFromUser(waittest.Context(t), "alice", "note-after-shutdown")
	if err == nil || !strings.Contains(err.Error(), "shutting down") {
		t.Errorf("a note to a stopping member: %v; want it refused, saying she is shutting down", err)
	}
	close(gate)
	if err := waittest.Recv(t, "the shutdown", shut); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	var read, leaked bool
	for _, r := range h.srv.Requests() {
		read = read || r.Rule == "alice reads the note"
		leaked = leaked || strings.Contains(string(r.Body), "note-after-shutdown")
	}
	if !read || leaked {
		t.Errorf("alice read the note sent before the shutdown: %v; the refused one reached a request: %v", read, leaked)
	}
	members, _ := tm.Members(waittest.Context(t))
	for _, m := range members {
		if m.Name == "alice" && m.State != team.StateStopped {
			t.Errorf("alice after the shutdown: %s", m.State)
		}
	}
}
