package cli

import (
	"context"
	"fmt"
	"iter"
	"os"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/keel-dev/keel/internal/cli/demo"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/provider/connect"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/render"
	"github.com/keel-dev/keel/internal/runconfig"
	"github.com/keel-dev/keel/internal/session"
)

func (a *app) demoCommand() *cobra.Command {
	opts := &demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "run a whole session offline against the built-in scripted model",
		Long: `demo starts the scripted model server on 127.0.0.1, writes a small project into a
temporary directory and runs a real keel session on it: the model reads a file, edits it,
runs a shell command and finishes. Then it forks three reviewers that share the conversation
and its prompt cache, starts a survey agent in the background, and takes the survey's report
when it arrives. Last, it leads a team: two teammates take four tasks (one waiting for
another) from a shared board, and one of them asks the lead for a permission. Nothing leaves
this machine.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runDemo(cmd.Context(), opts) },
	}
	cmd.Flags().BoolVar(&opts.Keep, "keep", false, "keep the temporary workspace and keel home")
	return cmd
}

// demoOptions are `keel demo`'s.
type demoOptions struct{ Keep bool }

func (a *app) runDemo(ctx context.Context, opts *demoOptions) error {
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
	if !opts.Keep {
		defer os.RemoveAll(root)
	}
	work := root + "/project"
	sess, err := a.openDemo(ctx, srv.URL(), work, root+"/home")
	if err != nil {
		return err
	}
	defer sess.Close()
	fmt.Fprintf(a.std.Out, "keel demo — scripted model at %s, workspace %s\n", srv.URL(), work)
	if err := a.playDemo(ctx, sess, work); err != nil {
		return err
	}
	for _, rec := range srv.Requests() {
		if strings.HasPrefix(rec.Rule, "fork-") && rec.Cache.InputTokens > 0 {
			fmt.Fprintf(a.std.Out, "fork %s: %d of %d input tokens read from the prompt cache (%.1f%%)\n", strings.TrimPrefix(rec.Rule, "fork-"),
				rec.Cache.CacheReadTokens, rec.Cache.InputTokens, 100*float64(rec.Cache.CacheReadTokens)/float64(rec.Cache.InputTokens))
		}
	}
	if opts.Keep {
		fmt.Fprintf(a.std.Out, "\nkept: %s\n", root)
	}
	return nil
}

// openDemo writes the demo's project into work and opens its session against the scripted
// model at url, with keel's files under home.
func (a *app) openDemo(ctx context.Context, url, work, home string) (*session.Session, error) {
	for _, d := range []string{work, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("create demo workspace: %w", err)
		}
	}
	if err := demo.Workspace(work); err != nil {
		return nil, err
	}
	prov, model, err := connect.Open(connect.Config{BaseURL: url, APIKey: "demo", Model: "sonnet",
		Retry: &provider.RetryPolicy{}}, func(string) string { return "" })
	if err != nil {
		return nil, err
	}
	return a.openSession(ctx, runconfig.Config{
		Cwd: work, Home: home, Model: model, Version: Version, PermissionMode: "acceptEdits",
		AllowedTools: []string{"Bash(sh hello.sh)", "mcp__changelog"}, ForkSubagents: true,
		Team: runconfig.Team{Enabled: true, Name: "demo"},
	}, session.Seams{
		Getenv: func(string) string { return "" }, Provider: prov, Logger: a.logger,
		MCPServers:          map[string]*mcp.Server{"changelog": demo.ChangelogServer()},
		ManagedSettingsPath: "-", ManagedMemoryPath: "-",
	})
}

// playDemo runs the demo's prompts — a fix, a fan-out to fork children and a background
// agent, a team — showing the conversation as it goes.
func (a *app) playDemo(ctx context.Context, sess *session.Session, work string) error {
	out := a.std.Out
	r := render.NewConversation(out, true)
	var mu sync.Mutex
	render := func(e event.Event) error {
		mu.Lock()
		defer mu.Unlock()
		return r.Render(e)
	}
	// The team works between the lead's turns: show its events as they happen.
	sess.Agents().SetIdleEvents(func(e event.Event) { _ = render(e) })
	show := func(events iter.Seq2[event.Event, error]) error {
		for e, err := range events {
			if err != nil {
				return err
			}
			if err := render(e); err != nil {
				return err
			}
		}
		return nil
	}
	if err := show(sess.Send(ctx, demo.Prompt)); err != nil {
		return err
	}
	if fixed, err := os.ReadFile(work + "/hello.sh"); err == nil {
		fmt.Fprintf(out, "\nhello.sh now reads:\n%s\n", fixed)
	}
	if err := show(sess.Send(ctx, demo.FanOutPrompt)); err != nil {
		return err
	}
	// As keel -p does: wait for the background agent, then give the model a turn for its report.
	if err := drain(ctx, sess, show); err != nil {
		return err
	}
	if err := show(sess.Send(ctx, demo.TeamPrompt)); err != nil {
		return err
	}
	// Then for the team: the lead wakes for the permission ask and the scribe's report, and
	// shuts the team down once the board is done.
	if err := drain(ctx, sess, show); err != nil {
		return err
	}
	if note, err := os.ReadFile(work + "/RELEASE.md"); err == nil {
		fmt.Fprintf(out, "\nRELEASE.md, written by a teammate:\n%s", note)
	}
	mu.Lock()
	defer mu.Unlock()
	return r.Finish()
}

// drain is what keel -p does after a prompt: wait for background agents and teammates, and
// give the lead a turn for whatever they report, until nothing is left running.
func drain(ctx context.Context, sess *session.Session, show func(iter.Seq2[event.Event, error]) error) error {
	for {
		n, err := sess.Agents().WaitBackground(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if err := show(sess.Agents().SendPending(ctx)); err != nil {
			return err
		}
	}
}
