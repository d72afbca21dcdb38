// Package effort is keel's one table of reasoning-effort levels and the extended-thinking
// budget each stands for. --effort, the Agent SDK's effort option and the effort key of agent
// definitions all read it, so a level means the same budget wherever it is given.
package effort

import "github.com/keel-dev/keel/internal/lazy"

// Levels are the effort levels, lowest first, in the order error messages list them.
var Levels = []string{"low", "medium", "high", "xhigh", "max"}

// budgets are the thinking budgets, in tokens, of the levels.
var budgets = lazy.Value[map[string]int64]{New: func() map[string]int64 {
	return map[string]int64{"low": 2048, "medium": 8192, "high": 16384, "xhigh": 24576, "max": 31999}
}}

// Budget returns the thinking budget of level; false for a level that is not one of [Levels].
func Budget(level string) (int64, bool) {
	b, ok := budgets.Get()[level]
	return b, ok
}

// Valid reports whether level is one of [Levels].
func Valid(level string) bool {
	_, ok := budgets.Get()[level]
	return ok
}
