// Command keel-tui is keel with its terminal UI linked in. `keel` with no -p hands over to
// it; it takes every flag keel takes. It is a separate binary so that keel itself starts
// without the UI's start-up cost (see internal/interactive).
package main

import (
	"context"
	"os"

	"github.com/keel-dev/keel"
	"github.com/keel-dev/keel/internal/cli"
	"github.com/keel-dev/keel/internal/interactive"
	"github.com/keel-dev/keel/internal/sandbox"
)

func main() {
	// keel re-executes itself as the sandbox's helper; that run stops here.
	sandbox.Dispatch(os.Args)
	os.Exit(cli.MainWith(os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, os.Getenv, run))
}

func run(ctx context.Context, opts keel.Options, prompt string, std cli.Streams, ui cli.UI) error {
	return interactive.Run(ctx, opts, prompt, std.In, std.Out, interactive.UI{NoColor: ui.NoColor, Version: ui.Version, BypassAgreed: ui.BypassAgreed})
}
