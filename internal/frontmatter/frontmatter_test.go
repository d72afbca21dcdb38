package frontmatter

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		name, in       string
		yaml, body     string
		hasFrontmatter bool
	}{
		{"none", "# Title\ntext\n", "", "# Title\ntext\n", false},
		{"basic", "---\nname: x\n---\nbody\n", "name: x\n", "body\n", true},
		{"crlf", "---\r\nname: x\r\n---\r\nbody\r\n", "name: x\r\n", "body\r\n", true},
		{"bom", "\xef\xbb\xbf---\nname: x\n---\n", "name: x\n", "", true},
		{"unclosed", "---\nname: x\nbody\n", "", "---\nname: x\nbody\n", false},
		{"empty", "---\n---\nbody", "", "body", true},
		{"dots close", "---\na: 1\n...\nrest", "a: 1\n", "rest", true},
		{"fence later", "text\n---\na: 1\n---\n", "", "text\n---\na: 1\n---\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Split([]byte(tt.in))
			if got := d.YAML != nil; got != tt.hasFrontmatter {
				t.Fatalf("has frontmatter = %v, want %v", got, tt.hasFrontmatter)
			}
			if diff := cmp.Diff(tt.yaml, string(d.YAML)); diff != "" {
				t.Errorf("yaml mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.body, string(d.Body)); diff != "" {
				t.Errorf("body mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzSplit(f *testing.F) {
	f.Add([]byte("---\nname: x\n---\nbody"))
	f.Add([]byte("---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := Split(data)
		if d.YAML == nil && len(d.Body) > len(data) {
			t.Fatalf("body longer than input")
		}
	})
}
