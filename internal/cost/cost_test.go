package cost

import (
	"math"
	"testing"

	"github.com/keel-dev/keel/internal/message"
)

func TestUSD(t *testing.T) {
	u := message.Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000, CacheCreationInputTokens: 1_000_000, CacheReadInputTokens: 1_000_000}
	tests := []struct {
		model string
		want  float64
	}{
		{"claude-sonnet-4-5-20250929", 3 + 15 + 3.75 + 0.3},
		{"claude-opus-4-5", 5 + 25 + 6.25 + 0.5},
		{"claude-opus-4-1", 15 + 75 + 18.75 + 1.5},
		{"llama3.1:8b", 0},
	}
	for _, tt := range tests {
		if got := USD(tt.model, u); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("USD(%q) = %v, want %v", tt.model, got, tt.want)
		}
	}
}
