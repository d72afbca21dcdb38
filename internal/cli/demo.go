package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/keel-dev/keel/internal/cli/demo"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/provider/connect"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/render"
	"github.com/keel-dev/keel/internal/session"
	"github.com/keel-dev/keel/internal/settings"
)

func (a *app) demoCommand() *cobra.Command {
	var keep bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "run a whole session offline against the built-in scripted model",
		Long: `demo starts the scripted model server on 127.0.0.1, writes a small project into a
temporary directory and runs a real keel session on it: the model reads a file, edits it,
runs a shell command and finishes. Nothing leaves this machine.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runDemo(cmd.Context(), keep) },
	}
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the temporary workspace and keel home")
	return cmd
}

func (a *app) runDemo(ctx context.Context, keep bool) error {
	sc, err := demo.Scenario()
	if err != nil {
		return err
	}
	srv, err := scripted.Start(ctx, "", sc, scripted.Options{})
	if err != nil {
		return fmt.Errorf("start scripted model: %w", err)
	}
	defer srv.Close()
	root, err := os.MkdirTemp("", "keel-demo-")
	if err != nil {
		return fmt.Errorf("create demo workspace: %w", err)
	}
	if !keep {
		defer os.RemoveAll(root)
	}
	work, home := root+"/project", root+"/home"
	for _, d := range []string{work, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create demo workspace: %w", err)
		}
	}
	if err := demo.Workspace(work); err != nil {
		return err
	}
	prov, model, err := connect.Open(connect.Config{BaseURL: srv.URL(), APIKey: "demo", Model: "claude-sonnet-4-5",
		Retry: &provider.RetryPolicy{}}, func(string) string { return "" })
	if err != nil {
		return err
	}
	sess, err := session.New(ctx, session.Options{
		Cwd: work, Home: home, Provider: prov, Model: model, Version: Version,
		PermissionMode:      "acceptEdits",
		SettingsFlags:       settings.Flags{AllowedTools: []string{"Bash(sh hello.sh)"}},
		ManagedSettingsPath: "-", ManagedMemoryPath: "-",
	})
	if err != nil {
		return err
	}
	defer sess.Close()
	out := a.std.Out
	fmt.Fprintf(out, "keel demo — scripted model at %s, workspace %s\n", srv.URL(), work)
	r := render.NewConversation(out, true)
	for e, err := range sess.Send(ctx, demo.Prompt) {
		if err != nil {
			return err
		}
		if err := r.Render(e); err != nil {
			return err
		}
	}
	if err := r.Finish(); err != nil {
		return err
	}
	fixed, err := os.ReadFile(work + "/hello.sh")
	if err == nil {
		fmt.Fprintf(out, "\nhello.sh now reads:\n%s", fixed)
	}
	if keep {
		fmt.Fprintf(out, "\nkept: %s\n", root)
	}
	return nil
}
