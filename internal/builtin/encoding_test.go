package builtin

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDetectEncoding(t *testing.T) {
	tests := []struct {
		data    string
		partial bool
		want    string // encoding name, or "binary"
	}{
		{"", false, "UTF-8"},
		{"plain ascii\n", false, "UTF-8"},
		{"héllo wörld 😀\n", false, "UTF-8"},
		{"\xef\xbb\xbfbom\n", false, "UTF-8 with BOM"},
		{"\xff\xfeh\x00i\x00", false, "UTF-16LE"},
		{"\xfe\xff\x00h\x00i", false, "UTF-16BE"},
		{"caf\xe9\n", false, "ISO-8859-1"},
		{"\x93quoted\x94\n", false, "Windows-1252"},
		{"\x93odd \x81 byte\n", false, "ISO-8859-1"}, // 0x81 is not Windows-1252: ISO-8859-1 keeps it
		{strings.Repeat("a", 5000) + "\xe9", false, "ISO-8859-1"},
		{"cut in a rune \xc3", true, "UTF-8"},
		{"ELF\x00\x01\x02", false, "binary"},
		{"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n", false, "binary"},
		{"PK\x03\x04\x14\x00\x00\x00", false, "binary"},
		{"\x1f\x8b\x08\x00gzipped", false, "binary"},
		{"GIF89a\x01\x00\x01\x00", false, "binary"},
		{"\xff\xfe\x00\x00h\x00\x00\x00", false, "binary"}, // UTF-32LE, not UTF-16LE
		{"\x00\x00\xfe\xff\x00\x00\x00h", false, "binary"},
		{"<!DOCTYPE html>\n<p>caf\xc3\xa9</p>\n", false, "UTF-8"},
		{"<?xml version=\"1.0\"?>\n<a/>\n", false, "UTF-8"},
		{"{\"k\": [1, 2]}\n", false, "UTF-8"},
	}
	for _, tt := range tests {
		enc, err := detectEncoding([]byte(tt.data), tt.partial)
		got := enc.name
		if err != nil {
			got = "binary"
		}
		if got != tt.want {
			t.Errorf("detectEncoding(%q) = %q (%v), want %q", tt.data, got, err, tt.want)
		}
	}
}

// TestWriteKeepsEncoding: replacing a file's whole content keeps how it was stored.
func TestWriteKeepsEncoding(t *testing.T) {
	tests := []struct {
		name, old, content, want string
		err                      string
	}{
		{"utf8", "old\n", "new é\n", "new \xc3\xa9\n", ""},
		{"bom", "\xef\xbb\xbfold\n", "new\n", "\xef\xbb\xbfnew\n", ""},
		{"bom not doubled", "\xef\xbb\xbfold\n", "\ufeffnew\n", "\xef\xbb\xbfnew\n", ""},
		{"crlf", "a\r\nb\r\n", "x\ny\n", "x\r\ny\r\n", ""},
		{"latin1", "caf\xe9\n", "thé\n", "th\xe9\n", ""},
		{"windows-1252", "\x93q\x94\n", "“€”\n", "\x93\x80\x94\n", ""},
		{"utf16le", "\xff\xfeo\x00", "é\n", "\xff\xfe\xe9\x00\n\x00", ""},
		{"unencodable", "caf\xe9\n", "日本\n", "caf\xe9\n", "cannot hold '日'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{"f.txt": tt.old})
			env := newEnv(t, dir)
			call(t, Read(), env, readInput{FilePath: "f.txt"})
			res := call(t, Write(), env, writeInput{FilePath: "f.txt", Content: tt.content})
			if tt.err != "" {
				if !res.IsError || !strings.Contains(res.ResultText(), tt.err) {
					t.Errorf("result %q, want an error containing %q", res.ResultText(), tt.err)
				}
			} else if res.IsError {
				t.Fatal(res.ResultText())
			}
			if diff := cmp.Diff(tt.want, readFile(t, filepath.Join(dir, "f.txt"))); diff != "" {
				t.Errorf("file mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEditRoundTrip: for every encoding, what Read shows is what Edit matches, and an edit
// changes only the bytes of the replaced text: everything before and after is byte-identical.
func TestEditRoundTrip(t *testing.T) {
	files := map[string]string{
		"latin1.txt":  "first line\ncaf\xe9 cr\xe8me br\xfbl\xe9e\n\xff end\n",
		"cp1252.txt":  "first line\n\x93caf\xe9\x94 \x96 crème\n\x80 end\n",
		"utf16le.txt": "\xff\xfef\x00i\x00r\x00s\x00t\x00\r\x00\n\x00c\x00a\x00f\x00\xe9\x00\r\x00\n\x00e\x00n\x00d\x00\r\x00\n\x00",
		"bom.txt":     "\xef\xbb\xbffirst line\r\ncafé\r\nend\r\n",
	}
	for name, data := range files {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{name: data})
			env := newEnv(t, dir)
			shown := call(t, Read(), env, readInput{FilePath: name}).ResultText()
			if strings.ContainsRune(shown, '\uFFFD') || !strings.Contains(shown, "caf") {
				t.Fatalf("Read shows %q", shown)
			}
			// The model copies two lines from what Read showed and edits the second.
			lines := strings.Split(shown, "\n")
			old := strings.SplitN(lines[0], "\t", 2)[1] + "\n" + strings.SplitN(lines[1], "\t", 2)[1]
			repl := strings.SplitN(lines[0], "\t", 2)[1] + "\n" + "changed"
			res := call(t, Edit(), env, editInput{FilePath: name, OldString: old, NewString: repl})
			if res.IsError {
				t.Fatal(res.ResultText())
			}
			got := readFile(t, filepath.Join(dir, name))
			enc, err := detectEncoding([]byte(data), false)
			if err != nil {
				t.Fatal(err)
			}
			changed, err := enc.encode("changed")
			if err != nil {
				t.Fatal(err)
			}
			// The bytes of the old second line, found by decoding the original.
			text, _ := enc.decode([]byte(data)[len(enc.bom):])
			second := strings.SplitN(text, "\n", 3)[1]
			second = strings.TrimSuffix(second, "\r")
			oldBytes, _ := enc.encode(second)
			want := strings.Replace(data, string(oldBytes), string(changed), 1)
			if got != want {
				t.Errorf("file after the edit:\n got %q\nwant %q", got, want)
			}
		})
	}
}
