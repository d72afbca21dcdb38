package sandbox

import (
	"strings"
	"testing"
)

// With allowUnixSockets, doctor says which sockets a command may reach: only those listed
// where Landlock holds it to them, any below ABI 9 — never that Unix sockets are refused.
func TestUnixSocketsFinding(t *testing.T) {
	held := unixSocketsFinding([]string{"/run/docker.sock"}, 9)
	if held.Status != "info" || !strings.Contains(held.Detail, "only /run/docker.sock") {
		t.Errorf("ABI 9: %+v", held)
	}
	open := unixSocketsFinding([]string{"/run/docker.sock"}, 7)
	if open.Status != "warn" || !strings.Contains(open.Detail, "any Unix socket") || !strings.Contains(open.Detail, "ABI 7") {
		t.Errorf("ABI 7: %+v", open)
	}
}
