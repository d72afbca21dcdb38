package transcript

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseHeader: keel's lines are read from their first bytes; lines in another field order
// are scanned member by member, whatever their values hold.
func TestScanHeader(t *testing.T) {
	tests := []struct {
		line string
		want header
		ok   bool
	}{
		{`{"type":"user","uuid":"u1","parentUuid":null,"message":{}}`, header{Type: "user", UUID: "u1"}, true},
		{`{"type":"assistant","uuid":"a","parentUuid":"u1"}`, header{Type: "assistant", UUID: "a", Parent: "u1"}, true},
		{`{"parentUuid":"p","message":{"role":"user","content":[{"type":"text","text":"} \"type\":\"x\" {"}]},"type":"user","uuid":"u"}`,
			header{Type: "user", UUID: "u", Parent: "p"}, true},
		{` { "uuid" : "u" , "type" : "summary" , "parentUuid" : null } `, header{Type: "summary", UUID: "u"}, true},
		{`{"type":"us\u0065r","uuid":"u\"q","parentUuid":"p"}`, header{Type: "user", UUID: `u"q`, Parent: "p"}, true},
		{`{"n":[1,{"a":[2,3]},"]"],"type":"rewind","uuid":"r","leafUuid":"x","ok":true,"x":-1.5e3}`, header{Type: "rewind", UUID: "r"}, true},
		{`{"message":{"type":"user"},"uuid":"u"}`, header{}, false},                                               // a nested type is not the entry's
		{`{"type":"user","uuid":"u","parentUuid":null,"message":{"role":`, header{Type: "user", UUID: "u"}, true}, // keel's prefix reads even when cut
		{`{"uuid":"u","message":{"role":`, header{}, false},
		{`not json`, header{}, false},
		{`{}`, header{}, false},
	}
	for _, tt := range tests {
		h, err := parseHeader([]byte(tt.line))
		if (err == nil) != tt.ok {
			t.Errorf("parseHeader(%s) error %v, want ok=%v", tt.line, err, tt.ok)
			continue
		}
		if diff := cmp.Diff(tt.want, h, cmp.AllowUnexported(header{})); tt.ok && diff != "" {
			t.Errorf("parseHeader(%s) mismatch (-want +got):\n%s", tt.line, diff)
		}
	}
}

// TestIndexCatchesUpOnForeignLines: lines another tool appended, in its own field order, are
// counted; a user entry of tool results is not taken for the first prompt.
func TestIndexCatchesUpOnForeignLines(t *testing.T) {
	w, path := newSession(t, "ix")
	mustAppend(t, w, toolResults("t0"))
	if err := w.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	appendBytes(t, path, []byte(`{"parentUuid":null,"cwd":"/x","type":"user","message":{"role":"user","content":[{"type":"text","text":"hello from elsewhere"}]},"uuid":"e1"}`+"\n"+
		`{"message":{"role":"assistant","content":[{"type":"text","text":"hi"}]},"type":"assistant","uuid":"e2","parentUuid":"e1"}`+"\n"+
		`{"type":"custom-title","uuid":"t","parentUuid":null,"value":"Named"}`+"\n"))
	list, err := List(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Messages != 3 || list[0].FirstPrompt != "hello from elsewhere" || list[0].Title != "Named" {
		t.Errorf("listing %+v", list)
	}
}
