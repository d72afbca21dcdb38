package builtin

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRgErrorNamesNoFileOfTheTree: rg's complaints about files of the tree it walked are
// left out of Grep's error (a name rg found through a swapped-in link would show there);
// the rest, a bad pattern's, is kept.
func TestRgErrorNamesNoFileOfTheTree(t *testing.T) {
	const root = "/ws"
	for _, tt := range []struct{ stderr, want string }{
		{"/ws/d/only-secret.txt: No such file or directory (os error 2)\n", ""},
		{"rg: /ws/d/k.txt: Permission denied (os error 13)\n/ws/e: No such file or directory (os error 2)\n", ""},
		{"regex parse error:\n    a(\n     ^\nerror: unclosed group\n", "regex parse error:\n    a(\n     ^\nerror: unclosed group"},
		{"/ws/d/x: No such file or directory (os error 2)\nregex parse error:\n", "regex parse error:"},
	} {
		if diff := cmp.Diff(tt.want, rgError(tt.stderr, root)); diff != "" {
			t.Errorf("rgError(%q) mismatch (-want +got):\n%s", tt.stderr, diff)
		}
	}
}
