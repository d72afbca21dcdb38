package cost

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/message"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestUSD prices a million tokens of every kind on each model family: input, output, cache
// writes at the 5-minute and the 1-hour rate, and cache reads.
func TestUSD(t *testing.T) {
	u := message.Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000, CacheCreationInputTokens: 2_000_000,
		CacheCreation1hInputTokens: 1_000_000, CacheReadInputTokens: 1_000_000}
	tests := []struct {
		model string
		want  float64 // input + output + 5m write + 1h write + read, per the price pages
	}{
		{"claude-opus-5-5", 4 + 20 + 5 + 8 + 0.20},
		{"claude-sonnet-5-5", 2 + 10 + 2.50 + 4 + 0.10},
		{"claude-fable-5-2", 8 + 40 + 10 + 16 + 0.20},
		{"claude-fable-5-1", 10 + 50 + 12.50 + 20 + 0.25},
		{"claude-opus-5", 5 + 25 + 6.25 + 10 + 0.50},
		{"claude-sonnet-5", 2 + 10 + 2.50 + 4 + 0.20},
		{"claude-sonnet-4-5-20250929", 3 + 15 + 3.75 + 6 + 0.30},
		{"claude-opus-4-5", 5 + 25 + 6.25 + 10 + 0.50},
		{"claude-opus-4-1", 15 + 75 + 18.75 + 30 + 1.50},
		{"claude-haiku-4-5", 1 + 5 + 1.25 + 2 + 0.10},
		{"claude-opus-5-5[1m]", 4 + 20 + 5 + 8 + 0.20},
	}
	for _, tt := range tests {
		got, ok := USD(tt.model, u)
		if !ok || !near(got, tt.want) {
			t.Errorf("USD(%q) = %v, %v; want %v", tt.model, got, ok, tt.want)
		}
	}
}

// TestWebSearchesArePriced: server-side searches cost $10 per 1,000 besides their tokens.
func TestWebSearchesArePriced(t *testing.T) {
	got, ok := USD("claude-sonnet-5-5", message.Usage{InputTokens: 1_000_000, WebSearchRequests: 3})
	if !ok || !near(got, 2+0.03) {
		t.Errorf("USD = %v, %v; want 2.03", got, ok)
	}
}

// TestTTLRates: one-hour writes cost twice the input price, five-minute ones 1.25 times.
func TestTTLRates(t *testing.T) {
	five, _ := USD("claude-opus-5-5", message.Usage{CacheCreationInputTokens: 1_000_000})
	hour, _ := USD("claude-opus-5-5", message.Usage{CacheCreationInputTokens: 1_000_000, CacheCreation1hInputTokens: 1_000_000})
	if !near(five, 4*1.25) || !near(hour, 4*2) {
		t.Errorf("a million written tokens: 5m $%v, 1h $%v; want $5 and $8", five, hour)
	}
}

// TestLongPromptTier: Haiku 5.5 prices a whole request by its prompt's length.
func TestLongPromptTier(t *testing.T) {
	short, _ := USD("claude-haiku-5-5", message.Usage{InputTokens: 100_000, OutputTokens: 1000})
	long, _ := USD("claude-haiku-5-5", message.Usage{InputTokens: 90_000, CacheReadInputTokens: 20_000, OutputTokens: 1000})
	if want := 100_000*0.10/1e6 + 1000*0.50/1e6; !near(short, want) {
		t.Errorf("short prompt = $%v, want $%v", short, want)
	}
	if want := 90_000*0.50/1e6 + 20_000*0.05/1e6 + 1000*2.50/1e6; !near(long, want) {
		t.Errorf("long prompt = $%v, want $%v (every token at the long-prompt rates)", long, want)
	}
}

// TestUnknownModels: a model keel has no price for is unknown — a local model, and a release
// newer than the table, which must not borrow its predecessor's price.
func TestUnknownModels(t *testing.T) {
	for _, m := range []string{"llama3.1:8b", "claude-opus-5-7", "claude-sonnet-6", "gpt-5", "claude-opus-5-5-preview"} {
		if usd, ok := USD(m, message.Usage{InputTokens: 1000}); ok || usd != 0 {
			t.Errorf("USD(%q) = %v, %v; want unknown", m, usd, ok)
		}
	}
	for _, m := range []string{"gpt-4o-2024-08-06", "claude-3-5-sonnet-latest", "claude-opus-4-20250514"} {
		if _, ok := Lookup(m); !ok {
			t.Errorf("snapshot %q has no price", m)
		}
	}
	if p, _ := Lookup("gpt-4.1-mini"); p.Input != 0.40 {
		t.Errorf("gpt-4.1-mini priced as %+v", p)
	}
}

func TestLedger(t *testing.T) {
	var l Ledger
	l.Add("claude-opus-5-5", message.Usage{InputTokens: 1_000_000})
	before := l.Clone()
	l.Add("claude-opus-5-5", message.Usage{OutputTokens: 1_000_000})
	l.Add("llama3.1:8b", message.Usage{InputTokens: 5})
	var sub Ledger
	sub.Add("claude-haiku-5-5", message.Usage{InputTokens: 1_000_000}) // past 100k: the long-prompt rate
	l.Merge(sub)
	if diff := cmp.Diff([]string{"claude-haiku-5-5", "claude-opus-5-5", "llama3.1:8b"}, l.Models()); diff != "" {
		t.Errorf("models (-want +got):\n%s", diff)
	}
	u, usd, all, any := l.Total()
	if u.InputTokens != 2_000_005 || !near(usd, 4+20+0.50) || all || !any {
		t.Errorf("total = %+v $%v all %v any %v", u, usd, all, any)
	}
	d := l.Since(before)
	if e := d.Entry("claude-opus-5-5"); e.Requests != 1 || e.Usage.InputTokens != 0 || !near(e.USD, 20) {
		t.Errorf("since: opus %+v", e)
	}
	if e := d.Entry("llama3.1:8b"); !e.Unpriced || e.USD != 0 {
		t.Errorf("since: llama %+v", e)
	}
	if _, _, all, any := (Ledger{}).Total(); !all || !any {
		t.Error("an empty ledger is not fully priced")
	}
}

func TestFormat(t *testing.T) {
	for _, tt := range []struct {
		all, any bool
		want     string
	}{{true, true, "$0.0123"}, {false, true, "$0.0123 + price unknown"}, {false, false, "price unknown"}} {
		if got := Format(0.0123, tt.all, tt.any, 4); got != tt.want {
			t.Errorf("Format(all %v, any %v) = %q, want %q", tt.all, tt.any, got, tt.want)
		}
	}
}
