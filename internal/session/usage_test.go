package session

import (
	"math"
	"testing"

	"github.com/keel-dev/keel/internal/cost"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

// TestModelUsageSumsEveryAgent: the result's modelUsage splits the run by model — the main
// agent and its fork children on the session's model, a subagent on the model its Agent call
// named — and each model's figures are the sum of what the server accounted for it, priced
// request by request; the totals are their sum.
func TestModelUsageSumsEveryAgent(t *testing.T) {
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "fork-child", When: scripted.Match{UserText: "<keel-fork-directive>"}, Reply: []scripted.Block{scripted.Text("fork done")}},
		{Name: "haiku-child", When: scripted.Match{Model: "haiku"}, Reply: []scripted.Block{scripted.Text("haiku done")}},
		{Name: "fanout", When: scripted.Match{UserText: "split"}, Times: 1, Reply: []scripted.Block{
			scripted.ToolUse("Agent", map[string]any{"description": "a", "prompt": "part a"}),
			scripted.ToolUse("Agent", map[string]any{"description": "b", "prompt": "part b"}),
			scripted.ToolUse("Agent", map[string]any{"description": "c", "prompt": "part c", "subagent_type": "Explore", "model": "haiku"}),
		}},
		{Name: "done", When: scripted.Match{ToolResult: "Agent"}, Reply: []scripted.Block{scripted.Text("all done")}},
	}}
	h := newHarness(t, sc, Options{ForkSubagents: true, MaxAgentDepth: 1})
	res := result(t, h.send(t, "split the work"))
	if res.Text != "all done" {
		t.Fatalf("result %q", res.Text)
	}
	want := map[string]message.Usage{}
	wantUSD := map[string]float64{}
	for _, r := range h.srv.Requests() {
		model := r.Cache.Model
		u := message.Usage{InputTokens: int64(r.Cache.UncachedTokens), CacheCreationInputTokens: int64(r.Cache.CacheCreationTokens),
			CacheCreation1hInputTokens: int64(r.Cache.CacheCreation1h), CacheReadInputTokens: int64(r.Cache.CacheReadTokens)}
		usd, _ := cost.USD(model, u)
		want[model] = want[model].Add(u)
		wantUSD[model] += usd
	}
	if len(res.ModelUsage) != 2 || len(want) != 2 {
		t.Fatalf("modelUsage has %d models (%v), the server saw %d", len(res.ModelUsage), res.ModelUsage, len(want))
	}
	var total float64
	for model, w := range want {
		got, ok := res.ModelUsage[model]
		if !ok {
			t.Errorf("no modelUsage for %s", model)
			continue
		}
		got.Usage.OutputTokens = 0 // the server's accounting holds input only
		if got.Usage != w {
			t.Errorf("%s: usage %+v, want the server's %+v", model, got.Usage, w)
		}
		if !got.PriceKnown || got.CostUSD < wantUSD[model] || got.ContextWindow == 0 || got.MaxOutputTokens == 0 {
			t.Errorf("%s: %+v, want a known price of at least $%v (output adds to it) and the model's limits", model, got, wantUSD[model])
		}
		total += got.CostUSD
	}
	if _, ok := res.ModelUsage["claude-haiku-5-5"]; !ok {
		t.Errorf("the haiku subagent is not in modelUsage: %v", res.ModelUsage)
	}
	if math.Abs(total-res.CostUSD) > 1e-12 {
		t.Errorf("total_cost_usd %v is not the sum of modelUsage (%v)", res.CostUSD, total)
	}
	if sum, _ := h.sess.Usage(); sum != res.Usage {
		t.Errorf("session usage %+v, result usage %+v", sum, res.Usage)
	}
}

// TestUnknownPriceIsNotFree: a model without a known price reports its tokens and no price.
func TestUnknownPriceIsNotFree(t *testing.T) {
	h := newHarness(t, &scripted.Scenario{}, Options{})
	h.sess.switches.SetModel("claude-scripted-preview")
	res := result(t, h.send(t, "hi"))
	mu, ok := res.ModelUsage["claude-scripted-preview"]
	if !ok || mu.PriceKnown || mu.CostUSD != 0 || mu.Usage.TotalInput() == 0 {
		t.Errorf("modelUsage = %+v, want the tokens with the price marked unknown", res.ModelUsage)
	}
	if _, _, all, any := h.sess.acct.ledgerNow().Total(); all || any {
		t.Error("the session's ledger calls the unknown price known")
	}
}

// TestOpusplanPlansWithOpus: with the opusplan alias the session plans with opus and carries
// the plan out with sonnet, by permission mode.
func TestOpusplanPlansWithOpus(t *testing.T) {
	h := newHarness(t, &scripted.Scenario{}, Options{PermissionMode: "plan", PlanModel: "claude-opus-5-5"})
	h.sess.switches.SetBase("claude-sonnet-5-5")
	h.send(t, "plan it")
	if err := h.sess.SetPermissionMode("acceptEdits"); err != nil {
		t.Fatal(err)
	}
	h.send(t, "do it")
	reqs := h.srv.Requests()
	if got := []string{reqs[0].Cache.Model, reqs[1].Cache.Model}; got[0] != "claude-opus-5-5" || got[1] != "claude-sonnet-5-5" {
		t.Errorf("models = %v, want opus while planning, then sonnet", got)
	}
}
