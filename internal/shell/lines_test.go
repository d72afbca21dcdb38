package shell

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRunOnLine: each line of output reaches OnLine as it is written, stderr too, the last
// one without a newline included; the result keeps the whole output (a CRLF line ending read
// as the newline it shows as).
func TestRunOnLine(t *testing.T) {
	var lines []string
	res, err := Run(t.Context(), Command{Script: "echo one; echo two >&2; printf 'three\\r\\nfour'", Dir: t.TempDir(),
		OnLine: func(l string) { lines = append(lines, l) }})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"one", "two", "three", "four"}, lines); diff != "" {
		t.Errorf("lines mismatch (-want +got):\n%s", diff)
	}
	if res.Output != "one\ntwo\nthree\nfour" {
		t.Errorf("output = %q", res.Output)
	}
}

func TestLineWriterLongLine(t *testing.T) {
	var lines []string
	w := &lineWriter{fn: func(l string) { lines = append(lines, l) }}
	long := strings.Repeat("x", maxLine+10)
	w.Write([]byte(long[:100]))
	w.Write([]byte(long[100:] + "\nend"))
	w.flush()
	want := []string{long[:maxLine], long[maxLine:], "end"}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("lines mismatch (-want +got):\n%s", diff)
	}
}
