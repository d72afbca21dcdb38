package frontmatter

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestFieldsStrict(t *testing.T) {
	in := "---\n# comment\nname: x\ntools: [Read, Grep]\nmaxTurns: 5\nhooks:\n  Stop:\n    - hooks: []\n---\nbody\n"
	fields, err := Split([]byte(in)).Fields()
	if err != nil {
		t.Fatalf("Fields: %v", err)
	}
	want := []Field{
		{Key: "name", Value: "x", Line: 3},
		{Key: "tools", Value: []any{"Read", "Grep"}, Line: 4},
		{Key: "maxTurns", Value: uint64(5), Line: 5},
		{Key: "hooks", Value: map[string]any{"Stop": []any{map[string]any{"hooks": []any{}}}}, Line: 6},
	}
	if diff := cmp.Diff(want, fields); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestFieldsFallsBack(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []Field
		errLine int
	}{
		{
			name: "colon in plain value",
			in:   "---\nname: a\ndescription: Use it. Triggers on: 'x', 'y'\ntools: Read, Grep\n---\n",
			want: []Field{
				{Key: "name", Value: "a", Line: 2},
				{Key: "description", Value: "Use it. Triggers on: 'x', 'y'", Line: 3},
				{Key: "tools", Value: "Read, Grep", Line: 4},
			},
			errLine: 3,
		},
		{
			name: "dialogue and literal backslash n",
			in:   "---\nname: b\ndescription: Examples:\\n\\n  user: 'hi'\\n  assistant: \"yo\"\nmodel: inherit\n---\n",
			want: []Field{
				{Key: "name", Value: "b", Line: 2},
				{Key: "description", Value: `Examples:\n\n  user: 'hi'\n  assistant: "yo"`, Line: 3},
				{Key: "model", Value: "inherit", Line: 4},
			},
			errLine: 3,
		},
		{
			name:    "not a mapping",
			in:      "---\n- a\n- b\n---\n",
			want:    nil,
			errLine: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fields, err := Split([]byte(tt.in)).Fields()
			if err == nil {
				t.Fatal("want a syntax error")
			}
			if err.Line != tt.errLine {
				t.Errorf("error line = %d, want %d (%v)", err.Line, tt.errLine, err)
			}
			if diff := cmp.Diff(tt.want, fields); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLenient(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Field
	}{
		{"plain", "a: b\n", []Field{{"a", "b", 1}}},
		{"trailing spaces", "name: recruiter  \n", []Field{{"name", "recruiter", 1}}},
		{"comment", "# c\na: b # note\n#x: y\n", []Field{{"a", "b", 2}}},
		{"continued plain", "d: one\n  two\n  three\nx: y\n", []Field{{"d", "one two three", 1}, {"x", "y", 4}}},
		{"double quoted", `d: "a: \"b\"\tc"` + "\n", []Field{{"d", "a: \"b\"\tc", 1}}},
		{"multi-line double quoted", "d: \"one\n  two: three\"\n", []Field{{"d", "one two: three", 1}}},
		{"single quoted", "d: 'it''s: x'\n", []Field{{"d", "it's: x", 1}}},
		{"literal block", "d: |\n  one: 1\n\n  two\nx: y\n", []Field{{"d", "one: 1\n\ntwo\n", 1}, {"x", "y", 5}}},
		{"folded block", "d: >-\n  one\n  two: x\n\n  three\n", []Field{{"d", "one two: x\nthree", 1}}},
		{"flow list", `t: ["Read", Grep, 'Bash(git add:*)']` + "\n", []Field{{"t", []any{"Read", "Grep", "Bash(git add:*)"}, 1}}},
		{"multi-line flow list", "t: [\n  Read,\n  Grep,\n]\n", []Field{{"t", []any{"Read", "Grep"}, 1}}},
		{"empty flow list", "t: []\n", []Field{{"t", []any{}, 1}}},
		{"block list", "t:\n  - Read\n  - \"Grep\"\n- Glob\n", []Field{{"t", []any{"Read", "Grep", "Glob"}, 1}}},
		{"nested map", "hooks:\n  Stop:\n    - x\nname: n\n", []Field{{"hooks", nil, 1}, {"name", "n", 4}}},
		{"empty value", "a:\nb: c\n", []Field{{"a", "", 1}, {"b", "c", 2}}},
		{"colon without space is not a key", "a: http://x\nhttp://y\n", []Field{{"a", "http://x http://y", 1}}},
		{"crlf", "a: b\r\nc: d\r\n", []Field{{"a", "b", 1}, {"c", "d", 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Lenient([]byte(tt.in), 1)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzFields(f *testing.F) {
	f.Add([]byte("---\nname: x\ndescription: a: b\ntools: [a, 'b']\n---\nbody"))
	f.Add([]byte("---\nd: |\n  x\n   y\n z\nt:\n - a\n---\n"))
	f.Add([]byte("---\nd: \"unterminated\n---\n"))
	f.Add([]byte("---\n'': x\n\"k\": [\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := Split(data)
		fields, _ := d.Fields()
		lines := strings.Count(string(data), "\n") + 1
		for _, fl := range fields {
			if fl.Line < 1 || fl.Line > lines {
				t.Fatalf("field %q on line %d of a %d-line input", fl.Key, fl.Line, lines)
			}
		}
		for _, fl := range Lenient(d.YAML, 2) {
			if fl.Key == "" {
				t.Fatalf("empty key from lenient parser")
			}
			if s, ok := fl.Value.(string); ok && utf8.ValidString(string(d.YAML)) && !utf8.ValidString(s) {
				t.Fatalf("lenient value %q is not valid UTF-8 though the input was", s)
			}
		}
	})
}
