package cost

import (
	"math"
	"strconv"
	"strings"
)

// FormatUSD writes an amount of dollars for a message: cents for amounts of a cent or more,
// and for smaller ones as many decimals as show its first two significant digits, so a
// budget of $0.000001 never reads as $0.0000.
func FormatUSD(v float64) string {
	a := math.Abs(v)
	prec := 2
	if a > 0 && a < 0.01 {
		prec = int(math.Ceil(-math.Log10(a))) + 1
	}
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if prec > 2 {
		s = strings.TrimRight(s, "0")
	}
	return "$" + s
}
