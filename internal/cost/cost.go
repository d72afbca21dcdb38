// Package cost turns token usage into dollars, from a table of published per-model prices.
package cost

import (
	"strings"

	"github.com/keel-dev/keel/internal/message"
)

// Price is a model's price in US dollars per million tokens.
type Price struct {
	Input, Output float64
}

// Multipliers of the input price for prompt-cache traffic (Anthropic's published rates).
const (
	cacheWrite5m = 1.25
	cacheRead    = 0.10
)

// prices maps a model-name prefix to its price; the longest matching prefix wins.
var prices = map[string]Price{
	"claude-opus-4-5":   {5, 25},
	"claude-opus-4-6":   {5, 25},
	"claude-opus-4":     {15, 75},
	"claude-sonnet-4":   {3, 15},
	"claude-3-7-sonnet": {3, 15},
	"claude-3-5-sonnet": {3, 15},
	"claude-haiku-4":    {1, 5},
	"claude-3-5-haiku":  {0.8, 4},
	"gpt-4o-mini":       {0.15, 0.6},
	"gpt-4o":            {2.5, 10},
	"gpt-4.1":           {2, 8},
}

// Lookup returns the price of model and whether it is known. Unknown models (local servers)
// cost nothing as far as keel can tell.
func Lookup(model string) (Price, bool) {
	best, bestLen := Price{}, 0
	for prefix, p := range prices {
		if strings.HasPrefix(model, prefix) && len(prefix) > bestLen {
			best, bestLen = p, len(prefix)
		}
	}
	return best, bestLen > 0
}

// USD is what usage on model costs. Cache writes are priced at the 5-minute rate.
func USD(model string, u message.Usage) float64 {
	p, ok := Lookup(model)
	if !ok {
		return 0
	}
	perToken := func(n int64, rate float64) float64 { return float64(n) * rate / 1e6 }
	return perToken(u.InputTokens, p.Input) +
		perToken(u.CacheCreationInputTokens, p.Input*cacheWrite5m) +
		perToken(u.CacheReadInputTokens, p.Input*cacheRead) +
		perToken(u.OutputTokens, p.Output)
}
