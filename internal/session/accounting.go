package session

import (
	"sync"

	"github.com/keel-dev/keel/internal/cost"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/models"
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

// accounts is what the session's requests used and cost: the ledger of every Send, what
// results already carried, the helpers' usage and the budget's running spend. It reads the
// agents' usage and the model catalog through functions.
type accounts struct {
	// mu guards ledger and accounting.
	mu sync.Mutex
	// ledger is what every Send used, by model: the main agent, compactions, subagents.
	ledger cost.Ledger
	// accounting marks what of the children's and helpers' usage a result already carries.
	accounting accountMark
	// helpers counts what tools' own model requests use (WebFetch, WebSearch); spend what
	// every request of the session used, as it arrives (the budget's view).
	helpers, spend meter
	// maxBudget is --max-budget-usd; 0 is no budget.
	maxBudget   float64
	agentLedger func() cost.Ledger
	catalog     func() *models.Catalog
}

// unaccounted returns the children's and helpers' usage that no result carries yet and
// marks it as carried.
func (a *accounts) unaccounted() cost.Ledger {
	agents, helpers := a.agentLedger(), a.helpers.ledger()
	a.mu.Lock()
	defer a.mu.Unlock()
	late := agents.Since(a.accounting.agents)
	late.Merge(helpers.Since(a.accounting.helpers))
	a.accounting.agents, a.accounting.helpers = agents, helpers
	return late
}

// settle is [Session.Settle].
func (a *accounts) settle(res *event.Result) bool {
	late := a.unaccounted()
	if len(late.Models()) == 0 {
		return false
	}
	a.mu.Lock()
	a.ledger.Merge(late)
	a.accounting.last.Merge(late)
	used := a.accounting.last.Clone()
	a.mu.Unlock()
	a.fillUsage(res, used)
	return true
}

// account fills a run's result from what it used — the main agent's requests, compactions,
// subagents and fork children, by model — and adds it to the session's ledger.
func (a *accounts) account(res *event.Result, used cost.Ledger) {
	a.fillUsage(res, used)
	a.mu.Lock()
	a.ledger.Merge(used)
	a.accounting.last = used.Clone()
	a.mu.Unlock()
}

// fillUsage sets a result's usage, cost and modelUsage from used.
func (a *accounts) fillUsage(res *event.Result, used cost.Ledger) {
	res.Usage, res.CostUSD, _, _ = used.Total()
	if models := used.Models(); len(models) > 0 {
		res.ModelUsage = map[string]event.ModelUsage{}
		for _, id := range models {
			e := used.Entry(id)
			mu := event.ModelUsage{Usage: e.Usage, CostUSD: e.USD, PriceKnown: !e.Unpriced}
			if m, ok := a.catalog().Lookup(id); ok {
				mu.ContextWindow, mu.MaxOutputTokens = m.ContextWindow, m.MaxOutputTokens
			}
			res.ModelUsage[id] = mu
		}
	}
}

// ledgerNow returns what every Send so far used, by model.
func (a *accounts) ledgerNow() cost.Ledger {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ledger.Clone()
}

// meter adds up usage as it is reported, from any goroutine (a loop.Meter): what the tools'
// own model requests used (helpers), or what every request of the session's agents used so
// far (spend, which the budget reads).
type meter struct {
	// mu guards used.
	mu   sync.Mutex
	used cost.Ledger
}

// Add counts one response.
func (m *meter) Add(model string, u message.Usage) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.used.Add(model, u)
}

// ledger returns a copy of what was counted so far.
func (m *meter) ledger() cost.Ledger {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used.Clone()
}

// budgetCheck ends the run of any agent — the main one, a subagent, a teammate — once the
// session has cost --max-budget-usd: what every agent's requests cost is counted as each
// response arrives, so children that overspend stop, and so does the turn that waits for
// them.
func (a *accounts) budgetCheck(out *loop.Outcome) (string, bool) {
	max := a.maxBudget
	if max <= 0 {
		return "", false
	}
	if _, spent, _, _ := a.spend.ledger().Total(); spent >= max {
		out.Text = "Reached the maximum budget of " + cost.FormatUSD(max)
		return loop.SubtypeMaxBudget, true
	}
	return "", false
}

// helperUsed counts a helper's request as the helpers' and the session's.
func (a *accounts) helperUsed(model string, u message.Usage) {
	a.helpers.Add(model, u)
	a.spend.Add(model, u)
}
