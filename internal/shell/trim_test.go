package shell

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTrim(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "a\nb\n", "a\nb\n"},
		{"no final newline", "a\nb", "a\nb"},
		{"crlf kept as newlines", "a\r\nb\r\n", "a\nb\n"},
		{"colours", "\x1b[1;32mok\x1b[0m  pkg\n", "ok  pkg\n"},
		{"osc title and charset", "\x1b]0;title\x07\x1b(Bhi\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\n", "hilink\n"},
		{"carriage-return redraws", "downloading  10%\rdownloading  55%\rdownloading 100%\ndone\n", "downloading 100%\ndone\n"},
		{"erase and redraw", "\r\x1b[K[=>   ] 1/4\r\x1b[K[====] 4/4\n", "[====] 4/4\n"},
		{"spinner", "working |\b/\b-\b\\\b|\bdone\n", "working done\n"},
		{"progress lines", "Collecting x\n  ━━━━━━━━━━━━━━━━━━━━━━━━ 1.2/10.0 MB 3.1 MB/s\n  ━━━━━━━━━━━━━━━━━━━━━━━━ 5.0/10.0 MB 3.3 MB/s\n  ━━━━━━━━━━━━━━━━━━━━━━━━ 10.0/10.0 MB 3.2 MB/s\nInstalled x\n",
			"Collecting x\n  ━━━━━━━━━━━━━━━━━━━━━━━━ 10.0/10.0 MB 3.2 MB/s\nInstalled x\n"},
		{"wget dots", "     0K .......... 10% 1.2M 3s\n    50K .......... 60% 2.0M 1s\n   100K .......... 100% 2.1M=0.5s\nsaved\n", "   100K .......... 100% 2.1M=0.5s\nsaved\n"},
		{"coverage is no progress", "ok  example.com/api/v1  0.1s  coverage: 80.0% of statements\nok  example.com/api/v2  0.2s  coverage: 70.0% of statements\n",
			"ok  example.com/api/v1  0.1s  coverage: 80.0% of statements\nok  example.com/api/v2  0.2s  coverage: 70.0% of statements\n"},
		{"numbered lines are no progress", "test 1 passed\ntest 2 passed\n", "test 1 passed\ntest 2 passed\n"},
		{"twice", "again\nagain\nend\n", "again\nagain\nend\n"},
		{"many times", strings.Repeat("waiting for the server\n", 50) + "up\n", "waiting for the server\n[the line above repeated 49 more times]\nup\n"},
		{"bell", "ding\a\n", "ding\n"},
		{"go test -v", "=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestB\n    b_test.go:9: log\n--- FAIL: TestB (0.01s)\n=== RUN   TestC\n=== RUN   TestC/sub\n    --- SKIP: TestC/sub (0.00s)\n--- PASS: TestC (0.00s)\n=== RUN   TestAB\n--- PASS: TestA (0.00s)\nPASS\n",
			"--- PASS: TestA (0.00s)\n=== RUN   TestB\n    b_test.go:9: log\n--- FAIL: TestB (0.01s)\n=== RUN   TestC\n    --- SKIP: TestC/sub (0.00s)\n--- PASS: TestC (0.00s)\n=== RUN   TestAB\n--- PASS: TestA (0.00s)\nPASS\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Trim(tt.in)); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
			// Written a byte at a time, as a pipe may deliver it, the result is the same.
			var b bytes.Buffer
			tr := newTrimmer(&b)
			for i := range len(tt.in) {
				tr.Write([]byte{tt.in[i]})
			}
			tr.Flush()
			if diff := cmp.Diff(tt.want, b.String()); diff != "" {
				t.Errorf("byte by byte: mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTrimLongLine: a line past maxTrimLine passes through whole, in bounded memory.
func TestTrimLongLine(t *testing.T) {
	long := strings.Repeat("x", 3*maxTrimLine)
	var b bytes.Buffer
	tr := newTrimmer(&b)
	tr.Write([]byte("a\n" + long + "\nb\n"))
	tr.Flush()
	if b.String() != "a\n"+long+"\nb\n" {
		t.Errorf("got %d bytes", b.Len())
	}
	if cap(tr.line) > 2*maxTrimLine {
		t.Errorf("the trimmer grew to hold %d bytes", cap(tr.line))
	}
}

func TestCleanLine(t *testing.T) {
	for in, want := range map[string]string{
		"plain\ttext":                 "plain\ttext",
		"\x1b[31merror\x1b[0m: x":     "error: x",
		"50%\r100%":                   "100%",
		"log line with trailing cr\r": "log line with trailing cr",
	} {
		if got := CleanLine(in); got != want {
			t.Errorf("CleanLine(%q) = %q, want %q", in, got, want)
		}
	}
}
