package skill

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSubstitute(t *testing.T) {
	tests := []struct {
		name, body, args, want string
	}{
		{"whole", "Fix $ARGUMENTS now", "issue 12", "Fix issue 12 now"},
		{"twice", "$ARGUMENTS / $ARGUMENTS", "a b", "a b / a b"},
		{"positional", "from $1 to $2", "x y", "from x to y"},
		{"positional missing is empty", "a=$1 b=$2.", "x", "a=x b=."},
		{"ninth", "$9", "1 2 3 4 5 6 7 8 nine", "nine"},
		{"two digits stay", "cost $10", "x", "cost $10\n\nARGUMENTS: x"},
		{"zero stays", "$0 and $1", "x", "$0 and x"},
		{"quoted argument", "file=$1 msg=$2", `a.go "fix the bug"`, "file=a.go msg=fix the bug"},
		{"indexed", "first=$ARGUMENTS[0] second=$ARGUMENTS[1] none=$ARGUMENTS[7]", "p q", "first=p second=q none="},
		{"bad index reads as whole", "$ARGUMENTS[x]", "p q", "p q[x]"},
		{"skill dir", "run ${CLAUDE_SKILL_DIR}/s.sh and ${KEEL_SKILL_DIR}/t", "", "run /sk/s.sh and /sk/t"},
		{"github expression untouched", "repo ${{ github.repository }} $HOME", "", "repo ${{ github.repository }} $HOME"},
		{"appended when no placeholder", "Reverse: {{args}}", "hello world", "Reverse: {{args}}\n\nARGUMENTS: hello world"},
		{"appended after newline", "Do it.\n", "now", "Do it.\n\nARGUMENTS: now"},
		{"not appended when empty", "Do it.", "  ", "Do it."},
		{"not appended when positional used", "file $1", "a b", "file a"},
		{"dollar at end", "price $", "x", "price $\n\nARGUMENTS: x"},
		{"args with dollar not re-expanded", "say $ARGUMENTS", "$1 $ARGUMENTS", "say $1 $ARGUMENTS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Substitute(tt.body, tt.args, "/sk")
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSplitArgs(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  a  b ", []string{"a", "b"}},
		{`"a b" c`, []string{"a b", "c"}},
		{`it's`, []string{"its"}},
		{`x="" y`, []string{"x=", "y"}},
		{`'' z`, []string{"", "z"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, splitArgs(tt.in)); diff != "" {
			t.Errorf("splitArgs(%q) mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
}

// FuzzSubstitute checks invariants that hold for every body and argument string: no panic,
// text without "$" passes through, and $ARGUMENTS always carries the arguments verbatim.
func FuzzSubstitute(f *testing.F) {
	f.Add("Fix $ARGUMENTS", "a b")
	f.Add("$1 $2 $ARGUMENTS[0] ${CLAUDE_SKILL_DIR}", `"x y" z`)
	f.Add("${{ github.x }} $", "$ARGUMENTS")
	f.Add("$ARGUMENTS[", "'")
	f.Fuzz(func(t *testing.T, body, args string) {
		got := Substitute(body, args, "/dir")
		if !strings.Contains(body, "$") {
			want := body
			if strings.TrimSpace(args) != "" {
				if want != "" && !strings.HasSuffix(want, "\n") {
					want += "\n"
				}
				want += "\nARGUMENTS: " + args
			}
			if got != want {
				t.Fatalf("body without $ changed: %q -> %q", body, got)
			}
		}
		if strings.Contains(strings.ReplaceAll(body, "$ARGUMENTS[", ""), "$ARGUMENTS") && !strings.Contains(got, args) {
			t.Fatalf("%q with args %q lost the arguments: %q", body, args, got)
		}
		// Substitution is one pass: expanding the arguments' own placeholders would let a
		// user's text rewrite the prompt.
		if body == "$ARGUMENTS" && got != args {
			t.Fatalf("$ARGUMENTS with %q = %q", args, got)
		}
	})
}
