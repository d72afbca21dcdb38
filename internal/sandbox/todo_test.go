package sandbox

import (
	"strings"
	"testing"
)

// TestRefuseExecLines: the exec lines of a to-do list, as git (old and new) reads them, become
// comments; every other line, comments and picks whose subject says exec included, stays as
// it is.
func TestRefuseExecLines(t *testing.T) {
	in := strings.Join([]string{
		"pick 1234 subject",
		"exec make test",
		"  \tx touch pwned",
		"x\ttouch pwned",
		"x",
		"exectouch pwned", // older git took "exec" as a prefix
		"exec",
		"pick 5678 exec in a subject",
		"# exec in a comment",
		"xargs is no command",
		"",
	}, "\n")
	got, n := refuseExecLines([]byte(in))
	if n != 6 {
		t.Errorf("%d lines refused, want 6:\n%s", n, got)
	}
	for i, line := range strings.Split(string(got), "\n") {
		refused := strings.HasPrefix(line, todoRefusedPrefix)
		if want := i >= 1 && i <= 6; refused != want {
			t.Errorf("line %d %q: refused %v, want %v", i, line, refused, want)
		}
		if orig := strings.Split(in, "\n")[i]; strings.TrimPrefix(line, todoRefusedPrefix) != orig {
			t.Errorf("line %d became %q, was %q", i, line, orig)
		}
	}
}
