package keel

import (
	"os"

	"github.com/keel-dev/keel/internal/sandbox"
)

// SandboxDispatch must be the first call in the main function of a program that embeds keel
// and runs Bash in the sandbox ([Options.Sandbox], or the sandbox.enabled setting): keel
// re-executes the program as the sandbox's helper, and this call is where the helper takes
// over (it never returns then). Otherwise it returns at once. Without it, keel looks for a
// keel executable beside the program or on PATH to serve as the helper.
func SandboxDispatch() { sandbox.Dispatch(os.Args) }
