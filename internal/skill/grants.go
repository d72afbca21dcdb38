package skill

import (
	"slices"
	"sync"
)

// Grants holds, per agent, the allowed-tools of the inline skills invoked during the current
// user turn. While a skill runs its rules are allowed without asking.
//
// How the session honours it: the permission gate treats Rules(agentID) as extra allow rules
// (deny rules still win); the Skill tool adds to it when the model loads an inline skill, the
// session adds the invocation's AllowedTools itself when the user types /name; the session
// calls End(agentID) when that agent's turn ends (the loop stops for the prompt), which ends
// the skill's run. Fork skills never grant here: their allowed tools go to the subagent.
//
// It is safe for concurrent use.
type Grants struct {
	// mu guards byAgent.
	mu      sync.Mutex
	byAgent map[string][]Grant
}

// Grant is one skill's allowed tools.
type Grant struct {
	Skill string
	Rules []string
}

// NewGrants returns an empty set of grants.
func NewGrants() *Grants { return &Grants{byAgent: map[string][]Grant{}} }

// Add records that skill runs in agentID's loop with rules allowed. Empty rules add nothing.
func (g *Grants) Add(agentID, skill string, rules []string) {
	if len(rules) == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.byAgent[agentID] = append(g.byAgent[agentID], Grant{Skill: skill, Rules: slices.Clone(rules)})
}

// Rules returns the rules granted to agentID now, each once, in the order granted.
func (g *Grants) Rules(agentID string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, gr := range g.byAgent[agentID] {
		for _, r := range gr.Rules {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// Active returns the grants of agentID, oldest first.
func (g *Grants) Active(agentID string) []Grant {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.byAgent[agentID])
}

// End drops agentID's grants: its turn is over, and with it the skills it ran.
func (g *Grants) End(agentID string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.byAgent, agentID)
}
