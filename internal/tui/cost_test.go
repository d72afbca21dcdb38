package tui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/keel-dev/keel"
)

// TestUnknownPriceIsShownAsUnknown: a run on a model without a known price shows its tokens,
// "price unknown" in /cost, and no price in the status line — never $0.00.
func TestUnknownPriceIsShownAsUnknown(t *testing.T) {
	sess, _ := newSession(t, nil)
	m := New(Config{Backend: sess, NoColor: true, Version: "test", Now: func() time.Time { return epoch }})
	defer m.Close()
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 24})
	m.Update(eventMsg{ev: keel.Result{Subtype: "success", Usage: keel.Usage{InputTokens: 1200, OutputTokens: 30},
		ModelUsage: map[string]keel.ModelUsage{"local-model": {Usage: keel.Usage{InputTokens: 1200, OutputTokens: 30}}}}})
	got := frame(m)
	if !strings.Contains(got, " tok · cache") || strings.Contains(got, "$") {
		t.Errorf("the status line shows a price for a model without one:\n%s", got)
	}
	if c := m.costText(); !strings.Contains(c, "cost: price unknown") {
		t.Errorf("/cost = %q", c)
	}
	m.Update(eventMsg{ev: keel.Result{Subtype: "success", CostUSD: 0.5,
		ModelUsage: map[string]keel.ModelUsage{"claude-opus-5-5": {CostUSD: 0.5, PriceKnown: true}}}})
	if c := m.costString(2); c != "$0.50 + price unknown" {
		t.Errorf("after a priced run too: %q", c)
	}
	if got := frame(m); !strings.Contains(got, "$0.50+? · cache") {
		t.Errorf("status line after a priced and an unpriced run:\n%s", got)
	}
}
