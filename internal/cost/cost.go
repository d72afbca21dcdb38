// Package cost turns token usage into dollars, from a table of published per-model prices.
// Each request is priced on its own — a price may depend on how long the request's prompt is
// — and a model without a known price is reported as such, never as free.
package cost

import (
	"fmt"
	"strings"

	"github.com/keel-dev/keel/internal/lazy"
	"github.com/keel-dev/keel/internal/message"
)

// Rates are prices in US dollars per million tokens.
type Rates struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
	// CacheWrite5m and CacheWrite1h are the prices of prompt-cache writes with the five-minute
	// and the one-hour TTL; CacheRead of cache hits and refreshes.
	CacheWrite5m float64 `json:"cache_write_5m"`
	CacheWrite1h float64 `json:"cache_write_1h"`
	CacheRead    float64 `json:"cache_read"`
}

// Price is one model's published prices.
type Price struct {
	Rates
	// LongPrompt, when set, replaces Rates for a whole request whose prompt (input, cache
	// reads and cache writes) is longer than LongThreshold tokens (Claude Haiku 5.5).
	LongThreshold int64
	LongPrompt    *Rates
	// Note says where a figure the price pages do not state came from; empty when every
	// rate is published.
	Note string
}

// Multipliers of the input price Anthropic applies to prompt-cache writes, for a model whose
// cache prices are not published separately.
const (
	write5m = 1.25
	write1h = 2.0
)

// anthropic builds the rates of a model whose cache rates follow the standard multipliers.
func anthropic(input, output, read float64) Rates {
	return Rates{Input: input, Output: output, CacheWrite5m: input * write5m, CacheWrite1h: input * write1h, CacheRead: read}
}

// prices maps a model id to its price; a dated snapshot of the id (claude-opus-4-5-20251101,
// gpt-4o-2024-08-06) has the same. A release the table does not name — claude-opus-5-7 —
// has no price, rather than its predecessor's: prices change between versions. Figures are
// from platform.claude.com (the pricing page and each model's overview), checked 2026-12-01,
// except where a Note says otherwise. The map is built on first use, not at every keel start.
var prices = lazy.Value[map[string]Price]{New: func() map[string]Price {
	return map[string]Price{
		"claude-fable-5-2": {Rates: anthropic(8, 40, 0.20),
			Note: "input and output from the models overview; cache read $0.20 and 5-minute write $10 from a reseller quoting the list price; the 1-hour write ($16) is 2× input: no published figure found"},
		"claude-fable-5-1":  {Rates: anthropic(10, 50, 0.25)},
		"claude-mythos-5-1": {Rates: anthropic(10, 50, 0.25)},
		"claude-fable-5":    {Rates: anthropic(10, 50, 1)},
		"claude-mythos-5":   {Rates: anthropic(10, 50, 1)},
		"claude-opus-5-5":   {Rates: anthropic(4, 20, 0.20)},
		"claude-opus-5":     {Rates: anthropic(5, 25, 0.50)},
		"claude-opus-4-8":   {Rates: anthropic(5, 25, 0.50)},
		"claude-opus-4-7":   {Rates: anthropic(5, 25, 0.50)},
		"claude-opus-4-6":   {Rates: anthropic(5, 25, 0.50)},
		"claude-opus-4-5":   {Rates: anthropic(5, 25, 0.50)},
		"claude-opus-4-1":   {Rates: anthropic(15, 75, 1.50)},
		"claude-opus-4-0":   {Rates: anthropic(15, 75, 1.50)},
		"claude-opus-4":     {Rates: anthropic(15, 75, 1.50)},
		"claude-3-opus":     {Rates: anthropic(15, 75, 1.50)},
		"claude-sonnet-5-5": {Rates: anthropic(2, 10, 0.10),
			Note: "cache read $0.10 since 2026-10-07 (0.05× input) as three price trackers report; the model's overview page still showed $0.20"},
		"claude-sonnet-5":   {Rates: anthropic(2, 10, 0.20)},
		"claude-sonnet-4-6": {Rates: anthropic(3, 15, 0.30)},
		"claude-sonnet-4-5": {Rates: anthropic(3, 15, 0.30)},
		"claude-sonnet-4-0": {Rates: anthropic(3, 15, 0.30)},
		"claude-sonnet-4":   {Rates: anthropic(3, 15, 0.30)},
		"claude-3-7-sonnet": {Rates: anthropic(3, 15, 0.30)},
		"claude-3-5-sonnet": {Rates: anthropic(3, 15, 0.30)},
		"claude-haiku-5-5": {Rates: anthropic(0.10, 0.50, 0.01), LongThreshold: 100_000, LongPrompt: &Rates{Input: 0.50, Output: 2.50, CacheWrite5m: 0.625, CacheWrite1h: 1, CacheRead: 0.05},
			Note: "cache reads ($0.01, over 100k tokens $0.05) as price trackers report; the overview page lists the other rates of both tiers"},
		"claude-haiku-4-5": {Rates: anthropic(1, 5, 0.10)},
		"claude-3-5-haiku": {Rates: Rates{Input: 0.80, Output: 4, CacheWrite5m: 1, CacheWrite1h: 1.6, CacheRead: 0.08}},
		"claude-3-haiku":   {Rates: Rates{Input: 0.25, Output: 1.25, CacheWrite5m: 0.30, CacheWrite1h: 0.50, CacheRead: 0.03}},
		// OpenAI: cached input is read at the listed rate; chat completions report no writes.
		"gpt-4o-mini":  {Rates: Rates{Input: 0.15, Output: 0.60, CacheRead: 0.075}},
		"gpt-4o":       {Rates: Rates{Input: 2.50, Output: 10, CacheRead: 1.25}},
		"gpt-4.1":      {Rates: Rates{Input: 2, Output: 8, CacheRead: 0.50}},
		"gpt-4.1-mini": {Rates: Rates{Input: 0.40, Output: 1.60, CacheRead: 0.10}},
		"gpt-4.1-nano": {Rates: Rates{Input: 0.10, Output: 0.40, CacheRead: 0.025}},
	}
}}

// Lookup returns the price of model and whether it is known. A model keel has no price for
// (a local server's, a release newer than keel) is unknown, not free.
func Lookup(model string) (Price, bool) {
	model = strings.TrimSuffix(model, "[1m]")
	if p, ok := prices.Get()[model]; ok {
		return p, true
	}
	// A snapshot: the id, a dash, then a date (digits and dashes) or "latest".
	for i := strings.LastIndexByte(model, '-'); i > 0; i = strings.LastIndexByte(model[:i], '-') {
		rest := model[i+1:]
		if rest != "latest" && strings.Trim(rest, "0123456789-") != "" {
			break
		}
		if p, ok := prices.Get()[model[:i]]; ok && (rest == "latest" || len(strings.ReplaceAll(rest, "-", "")) >= 6) {
			return p, true
		}
	}
	return Price{}, false
}

// Request is what one request with usage u cost at price p. Cache writes are split by TTL;
// a write the usage does not split is priced at the five-minute rate.
func (p Price) Request(u message.Usage) float64 {
	r := p.Rates
	if p.LongPrompt != nil && u.TotalInput() > p.LongThreshold {
		r = *p.LongPrompt
	}
	oneHour := min(u.CacheCreation1hInputTokens, u.CacheCreationInputTokens)
	perToken := func(n int64, rate float64) float64 { return float64(n) * rate / 1e6 }
	return perToken(u.InputTokens, r.Input) +
		perToken(u.CacheCreationInputTokens-oneHour, r.CacheWrite5m) +
		perToken(oneHour, r.CacheWrite1h) +
		perToken(u.CacheReadInputTokens, r.CacheRead) +
		perToken(u.OutputTokens, r.Output) +
		float64(u.WebSearchRequests)*WebSearchUSD
}

// WebSearchUSD is the price of one server-side web search on the Anthropic API ($10 per
// 1,000 searches, on top of the tokens the results add).
const WebSearchUSD = 10.0 / 1000

// USD is what one request with usage u on model cost, and whether the model's price is known.
func USD(model string, u message.Usage) (float64, bool) {
	p, ok := Lookup(model)
	if !ok {
		return 0, false
	}
	return p.Request(u), true
}

// Format renders a cost for people: dollars when every model is priced, "price unknown" when
// none is, and both when some are ("$0.0123 + price unknown").
func Format(usd float64, allKnown, anyKnown bool, digits int) string {
	dollars := fmt.Sprintf("$%.*f", digits, usd)
	switch {
	case allKnown:
		return dollars
	case anyKnown:
		return dollars + " + price unknown"
	}
	return "price unknown"
}
