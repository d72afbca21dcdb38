package cli

import (
	"context"
	"os"
	"strings"

	"github.com/charmbracelet/x/term"

	"github.com/keel-dev/keel"
	"github.com/keel-dev/keel/internal/tui"
)

// The TUI drives the public API, as any library user would.
var _ tui.Backend = (*keel.Session)(nil)

// runInteractive starts a session in the working directory and hands it to the terminal UI;
// the arguments, if any, are the first prompt. When stdin or stdout is not a terminal it
// falls back to a line-oriented loop: one prompt per input line, plain text out.
func (a *app) runInteractive(ctx context.Context, f *runFlags, args []string) error {
	prompt := strings.Join(args, " ")
	opts := keel.Options{
		Cwd:                f.cwd,
		Home:               a.env.Home,
		Provider:           f.providerName,
		Model:              f.model,
		BaseURL:            f.baseURL,
		MaxTurns:           f.maxTurns,
		SystemPrompt:       f.systemPrompt,
		AppendSystemPrompt: f.appendSystemPrompt,
		PermissionMode:     f.permissionMode,
	}
	if !isTerminal(a.std.In) || !isTerminal(a.std.Out) {
		pa := tui.NewPlainAsker(a.std.In, a.std.Out)
		opts.Ask = pa.Ask
		sess, err := keel.New(ctx, opts)
		if err != nil {
			return err
		}
		defer sess.Close()
		return tui.RunPlain(ctx, sess, pa, prompt)
	}
	asker := tui.NewAsker()
	opts.Ask = asker.Ask
	sess, err := keel.New(ctx, opts)
	if err != nil {
		return err
	}
	defer sess.Close()
	return tui.Run(ctx, tui.Config{
		Backend: sess,
		Asker:   asker,
		Prompt:  prompt,
		NoColor: a.getenv("NO_COLOR") != "",
		Version: Version,
	})
}

func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}
