package memory

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFindIncludes(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []includeRef
	}{
		{"relative", "see @./a.md now", []includeRef{{"./a.md", 1}}},
		{"bare", "@ARCHITECTURE.md\n", []includeRef{{"ARCHITECTURE.md", 1}}},
		{"home and abs", "x\n@~/n.md and @/etc/x.md", []includeRef{{"~/n.md", 2}, {"/etc/x.md", 2}}},
		{"fragment cut", "@a.md#section", []includeRef{{"a.md", 1}}},
		{"escaped space", `@my\ notes.md end`, []includeRef{{"my notes.md", 1}}},
		{"not after word", "mail me at a@b.md", nil},
		{"code span", "run `@./a.md` or ``@b.md``", nil},
		{"code span then text", "`x` @c.md", []includeRef{{"c.md", 1}}},
		{"unclosed backtick literal", "a ` @d.md", []includeRef{{"d.md", 1}}},
		{"span does not cross paragraphs", "a `x\n\n@e.md `", []includeRef{{"e.md", 3}}},
		{"fenced block", "```\n@./a.md\n```\n@b.md", []includeRef{{"b.md", 4}}},
		{"tilde fence", "~~~~ sh\n@a.md\n~~~\n@x.md\n~~~~\n@b.md", []includeRef{{"b.md", 6}}},
		{"longer close", "```\n@a.md\n`````\n@b.md", []includeRef{{"b.md", 4}}},
		{"unclosed fence swallows rest", "```\n@a.md\n", nil},
		{"indented 4 is not a fence", "    ```\n@a.md", []includeRef{{"a.md", 2}}},
		{"handle kept as candidate", "Thanks: @handle for #3", []includeRef{{"handle", 1}}},
		{"lone at", "@ alone", nil},
		{"crlf", "@a.md\r\n@b.md\r\n", []includeRef{{"a.md", 1}, {"b.md", 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := findIncludes(tt.in)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(includeRef{})); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzFindIncludes checks the scanner on arbitrary text: it never panics, every mention it
// returns is non-empty, lies on an existing line, and appears in that line after an "@";
// and text wrapped in a fenced block yields nothing.
func FuzzFindIncludes(f *testing.F) {
	f.Add("see @./a.md and `@b.md`\n```\n@c.md\n```\n@~/d.md")
	f.Add("``` `\n@x\n")
	f.Add("@a\\ b.md#x @/abs @@ @")
	f.Fuzz(func(t *testing.T, text string) {
		lines := strings.Split(text, "\n")
		for _, r := range findIncludes(text) {
			if r.Raw == "" {
				t.Fatalf("empty mention in %q", text)
			}
			if r.Line < 1 || r.Line > len(lines) {
				t.Fatalf("line %d out of range in %q", r.Line, text)
			}
			if !strings.Contains(lines[r.Line-1], "@") {
				t.Fatalf("line %d has no @ in %q", r.Line, text)
			}
		}
		if strings.Contains(text, "```") || strings.Contains(text, "~~~") {
			return
		}
		if refs := findIncludes("```\n" + text + "\n```\n"); len(refs) != 0 {
			t.Fatalf("mention inside a fence: %v", refs)
		}
	})
}
