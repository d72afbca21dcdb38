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

// account fills a run's result from what it used — the main agent's requests, compactions,
// subagents and fork children, by model — and adds it to the session's ledger.
func (s *Session) account(res *event.Result, used cost.Ledger) {
	s.fillUsage(res, used)
	s.mu.Lock()
	s.ledger.Merge(used)
	s.accounting.last = used.Clone()
	s.mu.Unlock()
}

// fillUsage sets a result's usage, cost and modelUsage from used.
func (s *Session) fillUsage(res *event.Result, used cost.Ledger) {
	res.Usage, res.CostUSD, _, _ = used.Total()
	if models := used.Models(); len(models) > 0 {
		res.ModelUsage = map[string]event.ModelUsage{}
		for _, id := range models {
			e := used.Entry(id)
			mu := event.ModelUsage{Usage: e.Usage, CostUSD: e.USD, PriceKnown: !e.Unpriced}
			if m, ok := s.switches.models().Lookup(id); ok {
				mu.ContextWindow, mu.MaxOutputTokens = m.ContextWindow, m.MaxOutputTokens
			}
			res.ModelUsage[id] = mu
		}
	}
}
