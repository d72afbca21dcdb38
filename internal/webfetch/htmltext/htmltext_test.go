package htmltext

import (
	"net/url"
	"strings"
	"testing"
)

const page = `<html><head><title>T</title><style>p{color:red}</style><script>alert(1)</script></head>
<body><h1>Hello</h1><p>Some <b>bold</b> text and <a href="/other">a link</a>.</p><ul><li>one</li><li>two</li></ul></body></html>`

// HTML becomes Markdown: headings, emphasis, lists, links made absolute against the page's
// host; scripts and styles are dropped. The page is decoded first, by the header's charset,
// a <meta> declaration or a byte-order mark.
func TestMarkdown(t *testing.T) {
	base, _ := url.Parse("https://example.com/docs/page?x=1")
	tests := []struct {
		name, header, body string
		contains, lacks    []string
	}{
		{"page", "text/html; charset=utf-8", page,
			[]string{"# Hello", "**bold**", "[a link](https://example.com/other)", "- one"}, []string{"alert", "color:red"}},
		{"latin1 header", "text/html; charset=iso-8859-1", "<p>caf\xe9</p>", []string{"café"}, nil},
		{"meta charset", "text/html", "<html><head><meta charset=\"windows-1252\"></head><body><p>na\xefve</p></body></html>", []string{"naïve"}, nil},
		{"utf-16 mark", "text/html", "\xff\xfe<\x00p\x00>\x00\xe9\x00<\x00/\x00p\x00>\x00", []string{"é"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			md, err := Markdown([]byte(tt.body), tt.header, base)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range tt.contains {
				if !strings.Contains(md, c) {
					t.Errorf("Markdown lacks %q:\n%s", c, md)
				}
			}
			for _, c := range tt.lacks {
				if strings.Contains(md, c) {
					t.Errorf("Markdown has %q:\n%s", c, md)
				}
			}
		})
	}
}

// Text is decoded to UTF-8 by its declared charset; what is still not UTF-8 is replaced.
func TestDecode(t *testing.T) {
	tests := []struct{ header, body, want string }{
		{"text/plain; charset=iso-8859-1", "caf\xe9", "café"},
		{"text/plain; charset=shift_jis", "\x93\xfa\x96\x7b", "日本"},
		{"text/plain; charset=utf-8", "ok \xff", "ok \uFFFD"},
		{"application/json", `{"ok": true}`, `{"ok": true}`},
	}
	for _, tt := range tests {
		got, err := Decode([]byte(tt.body), tt.header)
		if err != nil || got != tt.want {
			t.Errorf("Decode(%q, %q) = %q, %v; want %q", tt.body, tt.header, got, err, tt.want)
		}
	}
}
