package sandbox

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
)

// helperArg, as a program's first argument, makes [Dispatch] run the sandbox helper. It is
// not a command anyone types: keel passes it when it re-executes itself into the namespaces.
const helperArg = "__keel-sandbox-helper"

// dispatching is set once [Dispatch] ran in this process: the executable knows how to be
// the helper, so it can re-execute itself.
var dispatching atomic.Bool

// Dispatch must be the first call in main (and in TestMain of a test binary that runs
// sandboxed commands): when args ask for the sandbox helper, it becomes the helper and never
// returns; otherwise it returns at once, noting that this executable can be the helper.
// A program that embeds keel without calling it gets its sandbox from a keel executable
// found beside it or on PATH, or none (and says so).
func Dispatch(args []string) {
	dispatching.Store(true)
	if len(args) < 3 || args[1] != helperArg {
		return
	}
	err := runHelper(strings.Join(args[2:], "")) // the plan, in pieces (jsonPlan)
	fmt.Fprintf(os.Stderr, "keel sandbox: %v\n", err)
	os.Exit(helperFailed)
}

// helperFailed is the helper's exit code when the sandbox could not be set up; the Bash tool
// reports it as a sandbox failure, not as the command's.
const helperFailed = 125
