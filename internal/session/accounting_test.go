package session

import (
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/waittest"
)

// TestEveryRequestIsInOneResult: alice's request is answered only after the lead's result was
// made, so her usage is in no Send's result; Settle adds it to that result once the team
// settled (a headless run holds its last line until then), and the session's results add up
// to what the model server was asked — as the telemetry counts it.
func TestEveryRequestIsInOneResult(t *testing.T) {
	gate := make(chan struct{})
	alice := func(m scripted.Match) scripted.Match { m.System = mateIs("alice").System; return m }
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "alice", When: alice(scripted.Match{UserText: "say hi"}), Fault: &scripted.Fault{Hold: gate}, Reply: []scripted.Block{scripted.Text("hi")}},
		{Name: "lead spawns", When: leadTurn(scripted.Match{UserText: "start"}), Reply: []scripted.Block{
			scripted.ToolUse("Agent", map[string]any{"description": "greeter", "prompt": "say hi", "name": "alice"})}},
		{Name: "lead waits", When: leadTurn(scripted.Match{ToolResult: "Agent"}), Reply: []scripted.Block{scripted.Text("alice is on it")}},
	}, Fallback: &scripted.Rule{Reply: []scripted.Block{scripted.Text("ok")}}}
	h := newHarness(t, sc, Options{Team: TeamOptions{Enabled: true, Lease: waittest.Scale(2 * time.Second), ShutdownTimeout: waittest.Timeout()}})
	res := result(t, h.send(t, "start"))
	close(gate)
	results := []event.Result{}
	for _, e := range drain(t, h.sess) {
		if r, ok := e.(event.Result); ok && r.Origin.AgentID == "" {
			results = append(results, r)
		}
	}
	if !h.sess.Settle(&res) {
		t.Error("Settle found nothing to add: alice's request was counted before the lead's result")
	}
	results = append(results, res)
	var gotRead, gotWrite int64
	for _, r := range results {
		gotRead += r.Usage.CacheReadInputTokens
		gotWrite += r.Usage.CacheCreationInputTokens
	}
	var wantRead, wantWrite int64
	for _, r := range h.srv.Requests() {
		wantRead += int64(r.Cache.CacheReadTokens)
		wantWrite += int64(r.Cache.CacheCreationTokens)
	}
	if gotRead != wantRead || gotWrite != wantWrite {
		t.Errorf("the results say %d cache-read and %d cache-write tokens; the server counted %d and %d", gotRead, gotWrite, wantRead, wantWrite)
	}
	if h.sess.Settle(&res) {
		t.Error("a second Settle added usage again")
	}
}
