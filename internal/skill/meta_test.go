package skill

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRecoverLines reads frontmatter of the shape that strict YAML parsers reject (an unquoted
// ": " inside a plain multi-line value, comments, lists, blocks) with the line fallback.
func TestRecoverLines(t *testing.T) {
	src := "name: flow\n" +
		"aliases:\n  - discover\n  - probe\n" +
		"description: Multi-AI research\n  - Questions about patterns\n\n" +
		"  PRIORITY TRIGGERS (always invoke): \"octo research\"\n\n" +
		"  DO NOT use for: simple searches,\n  or debugging.\n\n" +
		"# Integration\n" +
		"agent: Explore\n" +
		"quoted: \"a: b\"\n" +
		"trigger: |\n  line one\n  line two\n" +
		"empty:\n"
	want := map[string]any{
		"name":        "flow",
		"aliases":     []any{"discover", "probe"},
		"description": "Multi-AI research - Questions about patterns\nPRIORITY TRIGGERS (always invoke): \"octo research\"\nDO NOT use for: simple searches, or debugging.",
		"agent":       "Explore",
		"quoted":      "a: b",
		"trigger":     "line one\nline two\n",
		"empty":       "",
	}
	if diff := cmp.Diff(want, recoverLines(src)); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}
