package keel

import (
	"context"
	"os"

	"github.com/keel-dev/keel/internal/sandbox"
)

// SandboxDispatch must be the first call in the main function of a program that embeds keel
// and runs Bash in the sandbox (on by default; [Options.Sandbox], the sandbox.enabled setting): keel
// re-executes the program as the sandbox's helper, and this call is where the helper takes
// over (it never returns then). Otherwise it returns at once. Without it, keel looks for a
// keel executable beside the program or on PATH to serve as the helper.
func SandboxDispatch() { sandbox.Dispatch(os.Args) }

// SandboxChecks are the sandbox's checks, as `keel doctor` prints them: what this machine
// supports (user namespaces, Landlock, seccomp, bubblewrap), whether a command starts in the
// sandbox, and what the session's sandbox allows. Their Status may also be "info".
func (s *Session) SandboxChecks(ctx context.Context) []Check {
	var out []Check
	for _, f := range s.s.SandboxFindings(ctx) {
		out = append(out, Check{Area: "sandbox", Name: f.Name, Status: f.Status, Detail: f.Detail})
	}
	return out
}
