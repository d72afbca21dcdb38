package session

import (
	"github.com/keel-dev/keel/internal/cost"
	"github.com/keel-dev/keel/internal/event"
)

// accountMark is what of the children's usage (subagents, background agents, teammates in
// this process) and the helper model's a result already carries. Children work between
// Sends too — a teammate's turn may end after the lead's result was written — so a result
// carries what grew since the previous result, not since its own Send began: every request
// is in exactly one result, as the telemetry counts it.
type accountMark struct {
	agents, helpers cost.Ledger
	// last is what the newest result accounted, so [Session.Settle] can restate it.
	last cost.Ledger
}

// unaccounted returns the children's and helpers' usage that no result carries yet and
// marks it as carried.
func (s *Session) unaccounted() cost.Ledger {
	agents, helpers := s.agentLedger(), s.helpers.ledger()
	s.mu.Lock()
	defer s.mu.Unlock()
	late := agents.Since(s.accounting.agents)
	late.Merge(helpers.Since(s.accounting.helpers))
	s.accounting.agents, s.accounting.helpers = agents, helpers
	return late
}

// Settle adds to res — the newest result, held back by a headless run until its team and
// background agents settled — what they used after it was made, so the last result line
// carries every request of the run. It reports whether res changed.
func (s *Session) Settle(res *event.Result) bool {
	late := s.unaccounted()
	if len(late.Models()) == 0 {
		return false
	}
	s.mu.Lock()
	s.ledger.Merge(late)
	s.accounting.last.Merge(late)
	used := s.accounting.last.Clone()
	s.mu.Unlock()
	s.fillUsage(res, used)
	return true
}
