package keel_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/keel-dev/keel"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

// TestSandboxChecks: the session gives /doctor the sandbox's checks, as `keel doctor` prints
// them: the machine's support and the session's sandbox (on by default, or off as asked).
func TestSandboxChecks(t *testing.T) {
	srv, err := scripted.Start(t.Context(), "", &scripted.Scenario{}, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, tc := range []struct{ flag, mode string }{{"", "workspace-write"}, {"off", "off: "}} {
		sess, err := keel.New(t.Context(), keel.Options{Cwd: t.TempDir(), Home: t.TempDir(), APIKey: "test", BaseURL: srv.URL(), Sandbox: tc.flag})
		if err != nil {
			t.Fatal(err)
		}
		checks := sess.SandboxChecks(t.Context())
		sess.Close()
		var names []string
		for _, c := range checks {
			names = append(names, c.Name)
			if c.Area != "sandbox" {
				t.Errorf("check %+v is not in the sandbox area", c)
			}
		}
		for _, want := range []string{"user namespaces", "Landlock", "seccomp", "keel uses", "mode", "writable", "network"} {
			if !slices.Contains(names, want) {
				t.Errorf("--sandbox %q: no %q check in %v", tc.flag, want, names)
			}
		}
		if i := slices.Index(names, "mode"); i >= 0 && !strings.HasPrefix(checks[i].Detail, tc.mode) {
			t.Errorf("--sandbox %q: mode %q", tc.flag, checks[i].Detail)
		}
	}
}
