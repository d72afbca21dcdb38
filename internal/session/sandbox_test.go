package session

import (
	"encoding/json"
	"testing"

	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/sandbox"
	"github.com/keel-dev/keel/internal/settings"
)

// TestSandboxAutoAllow: with autoAllowBashIfSandboxed, a Bash call the mode would ask about
// runs without a question when it runs in the sandbox; a call an ask rule names, one asking to
// run outside, an excluded command and other tools are still asked.
func TestSandboxAutoAllow(t *testing.T) {
	var sb settings.Sandbox
	sb.AutoAllowBashIfSandboxed.V = true
	sb.ExcludedCommands = []settings.Value[string]{{V: "docker:*"}}
	p := sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Settings: &sb, Dirs: []string{t.TempDir()}})
	s := &Session{sandbox: sandbox.New(p, sandbox.Options{})}
	if err := s.sandbox.Available(); err != nil {
		t.Skipf("no sandbox on this machine: %v", err)
	}
	req := func(tool string, in map[string]any) permission.AskRequest {
		raw, _ := json.Marshal(in)
		return permission.AskRequest{Request: permission.Request{Tool: tool, Input: raw}}
	}
	rule := req("Bash", map[string]any{"command": "make"})
	rule.Rule = &permission.Rule{Tool: "Bash", Behavior: permission.Ask}
	for name, tc := range map[string]struct {
		r    permission.AskRequest
		want bool
	}{
		"sandboxed":   {req("Bash", map[string]any{"command": "make test"}), true},
		"ask rule":    {rule, false},
		"outside":     {req("Bash", map[string]any{"command": "make", "dangerouslyDisableSandbox": true}), false},
		"excluded":    {req("Bash", map[string]any{"command": "docker ps"}), false},
		"other tools": {req("Write", map[string]any{"file_path": "/x"}), false},
	} {
		if got := s.sandboxAutoAllows(tc.r); got != tc.want {
			t.Errorf("%s: auto-allowed %v, want %v", name, got, tc.want)
		}
	}
	s.sandbox = sandbox.New(sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{t.TempDir()}}), sandbox.Options{})
	if s.sandboxAutoAllows(req("Bash", map[string]any{"command": "make"})) {
		t.Error("auto-allowed without autoAllowBashIfSandboxed")
	}
}
