package session

import (
	"sync"

	"github.com/keel-dev/keel/internal/cost"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/message"
)

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

// helperUsed counts a helper's request as the helpers' and the session's.
func (a *accounts) helperUsed(model string, u message.Usage) {
	a.helpers.Add(model, u)
	a.spend.Add(model, u)
}
