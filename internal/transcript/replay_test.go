package transcript

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRewindBranches(t *testing.T) {
	w, path := newSession(t, "s")
	mustAppend(t, w, userText("u1"))
	a1 := mustAppend(t, w, assistantText("a1"))
	u2 := mustAppend(t, w, userText("u2"))
	mustAppend(t, w, assistantText("a2"))

	steps := []struct {
		name string
		do   func()
		want []string
	}{
		{"rewind to before u2", func() {
			if err := w.Rewind(t.Context(), u2.ParentUUID); err != nil {
				t.Fatal(err)
			}
		}, []string{"u1", "a1"}},
		{"new branch", func() {
			mustAppend(t, w, userText("u3"))
			mustAppend(t, w, assistantText("a3"))
		}, []string{"u1", "a1", "u3", "a3"}},
		{"rewind to the start", func() {
			if err := w.Rewind(t.Context(), ""); err != nil {
				t.Fatal(err)
			}
		}, []string{}},
		{"fresh root", func() { mustAppend(t, w, userText("u4")) }, []string{"u4"}},
		{"back onto the first branch", func() {
			if err := w.Rewind(t.Context(), a1.UUID); err != nil {
				t.Fatal(err)
			}
			mustAppend(t, w, userText("u5"))
		}, []string{"u1", "a1", "u5"}},
	}
	for _, s := range steps {
		s.do()
		if err := w.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
		st := mustLoad(t, path)
		if diff := cmp.Diff(s.want, texts(st)); diff != "" {
			t.Errorf("%s: messages mismatch (-want +got):\n%s", s.name, diff)
		}
		if st.Repairs.Any() {
			t.Errorf("%s: a rewound branch reported as a repair: %s", s.name, st.Repairs)
		}
	}
	// Branches are kept: every message ever written is still in the file.
	b := readFile(t, path)
	for _, s := range []string{"u2", "a2", "u3", "a3", "u4"} {
		if !bytes.Contains(b, []byte(`"text":"`+s+`"`)) {
			t.Errorf("abandoned message %s is gone from the file", s)
		}
	}
}

func TestCompactionBoundary(t *testing.T) {
	w, path := newSession(t, "s")
	mustAppend(t, w, Entry{Type: TypeCustomTitle, Value: json.RawMessage(`"old title"`)})
	mustAppend(t, w, Entry{Type: TypeMode, Value: json.RawMessage(`"acceptEdits"`)})
	for i := range 200 {
		mustAppend(t, w, userText(fmt.Sprintf("before %d %s", i, strings.Repeat("x", 1000))))
	}
	b := mustAppend(t, w, Entry{Type: TypeSummary, Summary: "we talked"})
	mustAppend(t, w, Entry{Type: TypeCustomTitle, Value: json.RawMessage(`"new title"`)})
	mustAppend(t, w, userText("after"))
	mustAppend(t, w, assistantText("reply"))
	w.Close()

	st := mustLoad(t, path)
	got, ok := st.Boundary()
	if !ok || got.UUID != b.UUID || got.Summary != "we talked" {
		t.Fatalf("boundary = %+v, %v", got, ok)
	}
	if diff := cmp.Diff([]string{"after", "reply"}, texts(st)); diff != "" {
		t.Errorf("messages mismatch (-want +got):\n%s", diff)
	}
	if st.Title() != "new title" || st.Mode() != "acceptEdits" {
		t.Errorf("title %q mode %q: want the newest title and the mode carried by the boundary", st.Title(), st.Mode())
	}
	size := int64(len(readFile(t, path)))
	if st.Scanned > 4096 {
		t.Errorf("replay read %d of %d bytes; it should stop at the boundary", st.Scanned, size)
	}
}

func TestFork(t *testing.T) {
	w, path := newSession(t, "orig")
	mustAppend(t, w, Entry{Type: TypeCustomTitle, Value: json.RawMessage(`"t"`)})
	mustAppend(t, w, userText("u1"))
	a1 := mustAppend(t, w, assistantText("a1"))
	mustAppend(t, w, userText("dropped"))
	if err := w.Rewind(t.Context(), a1.UUID); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, w, userText("u2"))
	w.Close()
	before := readFile(t, path)

	dst := strings.TrimSuffix(path, "orig.jsonl") + "copy.jsonl"
	fw, fst, err := Fork(t.Context(), path, dst, testOpts("copy"))
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, fw, assistantText("a2 in copy"))
	fw.Close()

	if !bytes.Equal(before, readFile(t, path)) {
		t.Error("fork changed the original")
	}
	if fst.SessionID != "copy" {
		t.Errorf("fork state session = %q", fst.SessionID)
	}
	st := mustLoad(t, dst)
	if diff := cmp.Diff([]string{"u1", "a1", "u2", "a2 in copy"}, texts(st)); diff != "" {
		t.Errorf("forked messages mismatch (-want +got):\n%s", diff)
	}
	if st.Title() != "t" || st.SessionID != "copy" || st.Chain[1].UUID != a1.UUID {
		t.Errorf("fork: title %q session %q uuid %q", st.Title(), st.SessionID, st.Chain[1].UUID)
	}
	if bytes.Contains(readFile(t, dst), []byte("dropped")) {
		t.Error("fork copied an abandoned branch")
	}
	if diff := cmp.Diff([]string{"u1", "a1", "u2"}, texts(mustLoad(t, path))); diff != "" {
		t.Errorf("original mismatch (-want +got):\n%s", diff)
	}
}

// TestScanBackward checks the chunked scanner against a plain split, with lines shorter and
// longer than a chunk and lines crossing chunk edges.
func TestScanBackward(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 20 {
		var file bytes.Buffer
		var want []string
		n := rng.IntN(40) + 1
		for i := range n {
			size := rng.IntN(64 << 10)
			if rng.IntN(8) == 0 {
				size = rng.IntN(3 * chunkSize)
			}
			line := fmt.Sprintf("%d:%d:", round, i) + strings.Repeat(string(rune('a'+i%26)), size)
			want = append(want, fmt.Sprintf("%d@%d", len(line), file.Len()))
			file.WriteString(line + "\n")
		}
		var got []string
		err := scanBackward(context.Background(), bytes.NewReader(file.Bytes()), int64(file.Len()),
			func(line []byte, off int64, _ bool) error {
				if !bytes.HasPrefix(file.Bytes()[off:], line) {
					t.Fatalf("line at %d does not match the file", off)
				}
				got = append(got, fmt.Sprintf("%d@%d", len(line), off))
				return nil
			})
		if err != nil {
			t.Fatal(err)
		}
		for i, j := 0, len(got)-1; i < j; i, j = i+1, j-1 {
			got[i], got[j] = got[j], got[i]
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("round %d: lines mismatch (-want +got):\n%s", round, diff)
		}
	}
}

func TestParseHeader(t *testing.T) {
	tests := []struct {
		line string
		want header
		err  bool
	}{
		{`{"type":"user","uuid":"a","parentUuid":null,"x":1}`, header{"user", "a", ""}, false},
		{`{"type":"user","uuid":"a","parentUuid":"b"}`, header{"user", "a", "b"}, false},
		{`{"uuid":"a","parentUuid":"b","type":"assistant"}`, header{"assistant", "a", "b"}, false},
		{`{"type":"user","uuid":"a\u0041","parentUuid":null}`, header{"user", "aA", ""}, false},
		{`{"type":"user","uuid":"a"`, header{}, true},
		{`garbage`, header{}, true},
		{`{}`, header{}, true},
	}
	for _, tt := range tests {
		got, err := parseHeader([]byte(tt.line))
		if (err != nil) != tt.err {
			t.Errorf("%s: err = %v", tt.line, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: mismatch (-want +got):\n%s", tt.line, diff)
		}
	}
}
