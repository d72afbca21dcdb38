package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/keel-dev/keel/internal/cron"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/render"
)

// loopCommand is `keel loop [interval] PROMPT`: /loop headless. The prompt runs in one
// session again and again — at the interval, or self-paced (each run when the previous one
// ended) without one — until the model ends an answer with <loop-done/>, a run fails, or the
// user stops it (Ctrl+C, SIGTERM), which is no error.
func (a *app) loopCommand() *cobra.Command {
	opts := &loopOptions{}
	cmd := &cobra.Command{
		Use:   "loop [INTERVAL] PROMPT",
		Short: "run a prompt again and again: at an interval (5m, 2h) or self-paced, until the model says it is done",
		Long: `loop runs PROMPT in one session repeatedly, as /loop does in the terminal. With a leading
interval ("5m check the deploy") or a trailing one ("check the deploy every 20 minutes") runs
start that far apart; without one, each run starts when the previous ended. The loop stops when
the model ends an answer with <loop-done/>, when a run fails, or when you stop it (Ctrl+C).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Args = args
			return a.runLoop(cmd.Context(), opts)
		},
	}
	opts.register(cmd)
	return cmd
}

// loopOptions are `keel loop`'s: the run flags, and the words of the interval and prompt.
type loopOptions struct {
	runFlags
	Args []string
}

func (a *app) runLoop(ctx context.Context, opts *loopOptions) error {
	interval, prompt, err := cron.ParseLoop(strings.Join(opts.Args, " "))
	if err != nil {
		return usageError{err}
	}
	cfg, err := a.headlessConfig(&opts.runFlags)
	if err != nil {
		return err
	}
	sess, err := a.openSession(ctx, cfg, a.seams())
	if err != nil {
		return err
	}
	defer sess.Close()
	r, err := render.New(opts.outputFormat, a.std.Out, opts.verbose)
	if err != nil {
		return usageError{err}
	}
	r = render.WithNotices(r, opts.outputFormat, opts.verbose, a.std.Err)
	send := func(ctx context.Context, prompt string) (string, error) {
		var last event.Result
		for e, err := range sess.Send(ctx, prompt) {
			if err != nil {
				return "", err
			}
			_ = r.Render(e)
			if res, ok := e.(event.Result); ok && res.Origin.AgentID == "" {
				last = res
			}
		}
		if last.IsError {
			return last.Text, fmt.Errorf("%s: %s", last.Subtype, last.Text)
		}
		return last.Text, nil
	}
	runs, err := cron.RunLoop(ctx, interval, prompt, send)
	_ = r.Finish()
	fmt.Fprintf(a.std.Err, "keel: loop ended after %d run(s)\n", runs)
	if err != nil {
		return exitCodeError{code: exitError, err: err}
	}
	return nil
}
