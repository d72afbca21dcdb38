package session

import (
	"os"

	"github.com/keel-dev/keel/internal/cachewatch"
)

// subTotals is what the watcher counted between two snapshots.
func subTotals(now, before cachewatch.Totals) cachewatch.Totals {
	d := cachewatch.Totals{Hits: now.Hits - before.Hits, Misses: now.Misses - before.Misses, Breaks: now.Breaks - before.Breaks,
		ReadTokens: now.ReadTokens - before.ReadTokens, WriteTokens: now.WriteTokens - before.WriteTokens}
	for k, v := range now.ByKind {
		if n := v - before.ByKind[k]; n > 0 {
			if d.ByKind == nil {
				d.ByKind = map[string]int{}
			}
			d.ByKind[k] = n
		}
	}
	return d
}

func userHome() string {
	h, _ := os.UserHomeDir()
	return h
}
