// Command keel is the keel coding agent's command line. All of it lives in internal/cli; this
// file only hands over the process's arguments and streams.
package main

import (
	"os"

	"github.com/keel-dev/keel/internal/cli"
	"github.com/keel-dev/keel/internal/sandbox"
)

func main() {
	// keel re-executes itself as the sandbox's helper; that run stops here.
	sandbox.Dispatch(os.Args)
	os.Exit(cli.Main(os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, os.Getenv))
}
