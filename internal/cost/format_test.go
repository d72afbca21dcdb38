package cost

import "testing"

func TestFormatUSD(t *testing.T) {
	for _, tt := range []struct {
		v    float64
		want string
	}{
		{0, "$0.00"}, {1.5, "$1.50"}, {0.01, "$0.01"}, {0.000001, "$0.000001"}, {0.0000123, "$0.000012"},
		{0.00499, "$0.005"}, {12.345, "$12.35"},
	} {
		if got := FormatUSD(tt.v); got != tt.want {
			t.Errorf("FormatUSD(%v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}
