package permission

import "testing"

func mustRules(t testing.TB, b Behavior, texts ...string) []Rule {
	t.Helper()
	var out []Rule
	for _, s := range texts {
		r, err := ParseRule(s, b, Source{Name: "test"})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}
