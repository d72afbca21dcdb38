package effort

import "testing"

// Every level has a budget, and the budgets grow with the level.
func TestLevelsHaveGrowingBudgets(t *testing.T) {
	var prev int64
	for _, l := range Levels {
		b, ok := Budget(l)
		if !ok || b <= prev {
			t.Errorf("%s: budget %d (%v), want more than %d", l, b, ok, prev)
		}
		prev = b
	}
	if len(budgets.Get()) != len(Levels) {
		t.Errorf("%d budgets for %d levels", len(budgets.Get()), len(Levels))
	}
	if Valid("extreme") {
		t.Error("an unknown level is valid")
	}
}
