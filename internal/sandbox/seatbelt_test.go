package sandbox_test

import (
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/sandbox"
	"github.com/keel-dev/keel/internal/settings"
)

// TestSeatbeltProfile: the macOS profile denies by default, reads everywhere but the masked
// paths, writes only in the writable roots and the temporary directory (under both of its
// names) and never in the always-read-only paths, whose denial comes after the allowance it
// narrows; the network reaches only the proxy's port; paths are quoted.
func TestSeatbeltProfile(t *testing.T) {
	var sb settings.Sandbox
	sb.Filesystem.DenyRead = []settings.Value[string]{{V: "/ws/secrets"}}
	sb.Filesystem.AllowRead = []settings.Value[string]{{V: "/ws/secrets/public"}}
	sb.Network.AllowUnixSockets = []settings.Value[string]{{V: "/var/run/docker.sock"}}
	p := sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Settings: &sb, Dirs: []string{`/ws/a "quoted" dir`}, Home: "/Users/u"})
	prof := sandbox.SeatbeltProfile(p, []string{"/tmp/keel-123"}, 40123)
	lines := strings.Split(prof, "\n")
	index := func(sub string) int {
		for i, l := range lines {
			if strings.Contains(l, sub) {
				return i
			}
		}
		t.Errorf("profile lacks %q:\n%s", sub, prof)
		return -1
	}
	if lines[0] != "(version 1)" || lines[1] != "(deny default)" {
		t.Errorf("profile does not start by denying everything:\n%s", prof)
	}
	writeAllowed := index(`(allow file-write* (subpath "/ws/a \"quoted\" dir")`)
	index(`(subpath "/tmp/keel-123") (subpath "/private/tmp/keel-123")`)
	readOnly := index(`(deny file-write* (subpath "/ws/a \"quoted\" dir/.mcp.json")`)
	index(`(subpath "/ws/a \"quoted\" dir/.claude")`)
	index(`(subpath "/Users/u/.bashrc")`)
	if writeAllowed < 0 || readOnly < writeAllowed {
		t.Errorf("the read-only paths are not denied after the writable roots are allowed")
	}
	masked, unmasked := index(`(deny file-read* (subpath "/ws/secrets"))`), index(`(allow file-read* (subpath "/ws/secrets/public"))`)
	if readAll := index("(allow file-read*)"); !(readAll < masked && masked < unmasked) {
		t.Errorf("read rules out of order: all %d, masked %d, unmasked %d", readAll, masked, unmasked)
	}
	net := index("(deny network*)")
	if proxy := index(`(allow network-outbound (remote tcp "localhost:40123"))`); proxy < net {
		t.Error("the proxy is allowed before the network is denied")
	}
	index(`(allow network-outbound (remote unix-socket (path-literal "/var/run/docker.sock")))`)
	if strings.Contains(prof, "network-bind") {
		t.Error("listening allowed without allowLocalBinding")
	}

	ro := sandbox.SeatbeltProfile(sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeReadOnly, Dirs: []string{"/ws"}}), []string{"/tmp/k"}, 0)
	if strings.Contains(ro, `(subpath "/ws")`) || strings.Contains(ro, "remote tcp") {
		t.Errorf("read-only profile writes the workspace or reaches a proxy:\n%s", ro)
	}
}
