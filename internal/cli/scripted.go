package cli

import (
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/keel-dev/keel/internal/provider/scripted"
)

func (a *app) scriptedCommand() *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "scripted SCENARIO.yaml",
		Short: "serve the scripted model (Anthropic Messages and OpenAI chat APIs) for offline testing",
		Long: `scripted serves a scripted model on a loopback address: POST /v1/messages (SSE or
JSON), /v1/messages/count_tokens and /v1/chat/completions. The scenario file's ordered rules
match request features and answer with text and tool calls, or inject faults. Point keel (or
your own agent) at it with ANTHROPIC_BASE_URL=http://ADDR.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := scripted.LoadScenario(args[0])
			if err != nil {
				return usageError{err}
			}
			logger := slog.New(slog.NewTextHandler(a.std.Err, nil))
			return scripted.Serve(cmd.Context(), addr, sc, logger)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8765", "address to listen on (loopback)")
	return cmd
}
