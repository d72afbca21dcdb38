package cli

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/keel-dev/keel/internal/provider/scripted"
)

// scriptedExample is the commented scenario `keel scripted --example` prints.
//
//go:embed scripted_example.yaml
var scriptedExample string

func (a *app) scriptedCommand() *cobra.Command {
	opts := &scriptedOptions{}
	cmd := &cobra.Command{
		Use:   "scripted SCENARIO.yaml",
		Short: "serve the scripted model (Anthropic Messages and OpenAI chat APIs) for offline testing",
		Long: `scripted serves a scripted model on a loopback address: POST /v1/messages (SSE or
JSON), /v1/messages/count_tokens and /v1/chat/completions. The scenario file's ordered rules
match request features and answer with text and tool calls, or inject faults. Point keel (or
your own agent) at it with ANTHROPIC_BASE_URL=http://ADDR. keel scripted --example prints a
commented scenario to start from.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Scenario = args[0]
			}
			return a.runScripted(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Addr, "addr", "127.0.0.1:8765", "address to listen on (loopback)")
	cmd.Flags().BoolVar(&opts.Example, "example", false, "print a commented scenario and exit")
	return cmd
}

// scriptedOptions are `keel scripted`'s: the address, --example, and the scenario file.
type scriptedOptions struct {
	Addr     string
	Example  bool
	Scenario string
}

func (a *app) runScripted(ctx context.Context, opts *scriptedOptions) error {
	if opts.Example {
		_, err := fmt.Fprint(a.std.Out, scriptedExample)
		return err
	}
	if opts.Scenario == "" {
		return usageError{errors.New("keel scripted needs a scenario file (keel scripted --example > scenario.yaml writes one to start from)")}
	}
	sc, err := scripted.LoadScenario(opts.Scenario)
	if err != nil {
		return usageError{err}
	}
	logger := slog.New(slog.NewTextHandler(a.std.Err, nil))
	return scripted.Serve(ctx, opts.Addr, sc, logger)
}
