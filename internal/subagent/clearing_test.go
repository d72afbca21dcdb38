package subagent

import (
	"testing"

	"github.com/keel-dev/keel/internal/cachewatch"
	"github.com/keel-dev/keel/internal/clearing"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

// Every agent gets a clearer of stale tool results. One whose cache watcher outlives it (the
// main agent, rebuilt for every Send) gets the same clearer each time, so it still knows when
// the previous Send's request went out; NoClearing turns clearing off.
func TestEveryAgentClearsAndTheMainAgentKeepsItsClearer(t *testing.T) {
	r := newWorld(t, &scripted.Scenario{}, worldOptions{}).runner
	w := cachewatch.New(cachewatch.Options{})
	first, second := r.NewAgent(AgentSpec{Watch: w}), r.NewAgent(AgentSpec{Watch: w})
	if first.Clear == nil || first.Clear != second.Clear {
		t.Errorf("agents sharing a cache watcher got clearers %p and %p, want one", first.Clear, second.Clear)
	}
	child := r.NewAgent(AgentSpec{})
	if child.Clear == nil || child.Clear == first.Clear {
		t.Errorf("a child got clearer %p (the main agent's is %p), want its own", child.Clear, first.Clear)
	}
	off := newWorld(t, &scripted.Scenario{}, worldOptions{cfg: func(c *Config) { c.Seams.NoClearing = true }}).runner
	if a := off.NewAgent(AgentSpec{Watch: w}); a.Clear != nil {
		t.Error("NoClearing left a clearer")
	}
}

// ProviderClearing gives every agent the provider's clearing, with the policy's thresholds,
// and no clearer of its own; NoClearing still turns all clearing off.
func TestProviderClearingReplacesTheClearer(t *testing.T) {
	policy := clearing.Policy{Trigger: 7_000, Keep: 4, MinFree: 900}
	r := newWorld(t, &scripted.Scenario{}, worldOptions{cfg: func(c *Config) {
		c.Seams.ProviderClearing, c.Seams.Clearing = true, policy
	}}).runner
	for _, a := range []*loop.Agent{r.NewAgent(AgentSpec{Watch: cachewatch.New(cachewatch.Options{})}), r.NewAgent(AgentSpec{})} {
		if a.Clear != nil {
			t.Error("an agent left to the provider's clearing has a clearer of its own")
		}
		want := provider.ToolResultClearing{Trigger: 7_000, Keep: 4, ClearAtLeast: 900}
		if a.ClearByProvider == nil || *a.ClearByProvider != want {
			t.Errorf("ClearByProvider %+v, want %+v", a.ClearByProvider, want)
		}
	}
	off := newWorld(t, &scripted.Scenario{}, worldOptions{cfg: func(c *Config) {
		c.Seams.ProviderClearing, c.Seams.NoClearing = true, true
	}}).runner
	if a := off.NewAgent(AgentSpec{}); a.Clear != nil || a.ClearByProvider != nil {
		t.Error("NoClearing left a clearing on")
	}
}
