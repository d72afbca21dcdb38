package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/keel-dev/keel/internal/companion"
	"github.com/keel-dev/keel/internal/daemon"
	"github.com/keel-dev/keel/internal/session"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/subagent"
)

// supervisorCommand is `keel supervisor …`: the per-user process that owns background agents
// beyond the life of the keel that started them.
func (a *app) supervisorCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "supervisor",
		Short: "the per-user supervisor that keeps background agents alive: status, stop, logs",
		Long: `The supervisor runs background agents so that they outlive the keel that started them
(keel -p … --no-wait, or one killed meanwhile); their results reach the session when it next
runs (keel --continue). It starts on demand; its environment comes from settings (the env key
of the user and managed settings), never from the shell that started it. With
coordination.backend "nats" and no url, it also runs an embedded nats-server.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runSupervisorStatus(cmd.Context(), &supervisorStatusOptions{})
		},
	}
	statusOpts := &supervisorStatusOptions{}
	status := &cobra.Command{
		Use: "status", Short: "say whether the supervisor runs, and list its agents", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runSupervisorStatus(cmd.Context(), statusOpts) },
	}
	status.Flags().BoolVar(&statusOpts.JSON, "json", false, "print JSON")
	start := &cobra.Command{
		Use: "start", Short: "start the supervisor unless it runs", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runSupervisorStart(cmd.Context()) },
	}
	stop := &cobra.Command{
		Use: "stop", Short: "stop the supervisor (running agents go on; the next supervisor adopts them)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runSupervisorStop(cmd.Context()) },
	}
	logsOpts := &supervisorLogsOptions{}
	logs := &cobra.Command{
		Use: "logs", Short: "print the supervisor's log", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runSupervisorLogs(cmd.Context(), logsOpts) },
	}
	logs.Flags().IntVarP(&logsOpts.Lines, "lines", "n", 100, "print the last N lines (0: all)")
	runOpts := &supervisorRunOptions{}
	run := &cobra.Command{
		Use: "run", Short: "run the supervisor in the foreground (what starting it on demand runs)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runSupervisorRun(cmd.Context(), runOpts) },
	}
	run.Flags().BoolVar(&runOpts.NATS, "nats", false, "also run the embedded nats-server")
	runJob := &cobra.Command{
		Use: "run-job AGENT_ID", Hidden: true, Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runSupervisorJob(cmd.Context(), &supervisorJobOptions{AgentID: args[0]})
		},
	}
	cmd.AddCommand(status, start, stop, logs, run, runJob)
	return cmd
}

// runSupervisorStart is `keel supervisor start`, which takes no flags or arguments.
func (a *app) runSupervisorStart(ctx context.Context) error {
	info, err := a.supervisorClient().Ensure(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.std.Out, "supervisor running (pid %d)\n", info.PID)
	return nil
}

// runSupervisorStop is `keel supervisor stop`, which takes no flags or arguments.
func (a *app) runSupervisorStop(ctx context.Context) error {
	c := a.supervisorClient()
	defer c.Close()
	stopped, err := c.Shutdown(ctx)
	if err != nil {
		return err
	}
	if stopped {
		fmt.Fprintln(a.std.Out, "supervisor stopped")
	} else {
		fmt.Fprintln(a.std.Out, "no supervisor is running")
	}
	return nil
}

// supervisorLogsOptions are `keel supervisor logs`'s: how many of the last lines (0: all).
type supervisorLogsOptions struct{ Lines int }

func (a *app) runSupervisorLogs(_ context.Context, opts *supervisorLogsOptions) error {
	b, err := os.ReadFile(daemon.NewLayout(a.env.Home).Log)
	if errors.Is(err, os.ErrNotExist) {
		return errors.New("the supervisor has not run yet: no log")
	}
	if err != nil {
		return err
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if opts.Lines > 0 && len(all) > opts.Lines {
		all = all[len(all)-opts.Lines:]
	}
	fmt.Fprintln(a.std.Out, strings.Join(all, "\n"))
	return nil
}

// supervisorRunOptions are `keel supervisor run`'s: NATS runs the embedded nats-server.
type supervisorRunOptions struct{ NATS bool }

func (a *app) runSupervisorRun(ctx context.Context, opts *supervisorRunOptions) error {
	logger := slog.New(slog.NewTextHandler(a.std.Err, nil))
	err := daemon.Run(ctx, daemon.Config{Home: a.env.Home, Exe: companion.Self(), Env: a.supervisorEnv(),
		NATS: opts.NATS || a.embeddedNATS(), Teams: a.supervisorTeams, TeamLease: a.env.TeamLease, Version: Version, Logger: logger})
	if errors.Is(err, daemon.ErrRunning) {
		fmt.Fprintln(a.std.Err, "keel: a supervisor is already running")
		return nil
	}
	return err
}

// supervisorJobOptions are `keel supervisor run-job`'s: the agent the job runs.
type supervisorJobOptions struct{ AgentID string }

func (a *app) runSupervisorJob(ctx context.Context, opts *supervisorJobOptions) error {
	logger := slog.New(slog.NewTextHandler(a.std.Err, nil))
	return daemon.RunJob(ctx, a.env.Home, opts.AgentID, a.openJob, logger)
}

// supervisorStatusOptions are `keel supervisor status`'s (and `keel supervisor`'s).
type supervisorStatusOptions struct{ JSON bool }

func (a *app) runSupervisorStatus(ctx context.Context, opts *supervisorStatusOptions) error {
	c := a.supervisorClient()
	defer c.Close()
	st, err := c.Status(ctx)
	if err != nil {
		return err
	}
	if opts.JSON {
		enc := json.NewEncoder(a.std.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	if st.Info != nil {
		fmt.Fprintf(a.std.Out, "supervisor running: pid %d since %s (keel %s)\n", st.Info.PID, st.Info.Started.Format(time.DateTime), st.Info.Version)
		if st.Info.NATSURL != "" {
			fmt.Fprintf(a.std.Out, "embedded NATS: %s (keel-nats, pid %d)\n", st.Info.NATSURL, st.Info.NATSPID)
		}
	} else {
		fmt.Fprintln(a.std.Out, "supervisor not running (it starts when a background agent needs it)")
	}
	fmt.Fprintf(a.std.Out, "log: %s\n", st.Log)
	if len(st.Jobs) == 0 {
		fmt.Fprintln(a.std.Out, "no background agents")
		return nil
	}
	tw := tabwriter.NewWriter(a.std.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nAGENT\tSTATE\tDELIVERED\tSESSION\tDESCRIPTION")
	for _, j := range st.Jobs {
		fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%s\n", j.Agent.ID, j.State, j.Delivered, j.Agent.SessionID, j.Agent.Description)
	}
	return tw.Flush()
}

// userSettings are the user's and the administrator's settings: the supervisor belongs to
// the user, not to a project.
func (a *app) userSettings() *settings.Settings {
	st, _ := settings.Load(settings.Options{Env: settings.Env{Home: a.env.Home}})
	return st
}

// supervisorEnv is the supervisor's environment, from settings (see daemon.Environ).
func (a *app) supervisorEnv() []string {
	env := map[string]string{}
	for k, v := range a.userSettings().Env {
		env[k] = v.V
	}
	return daemon.Environ(a.getenv, a.env.Home, env)
}

// embeddedNATS reports whether the user's settings ask for the NATS backend without naming a
// server: then the supervisor runs one.
func (a *app) embeddedNATS() bool {
	backend, n := a.userSettings().CoordinationBackend(settings.Env{})
	return backend == "nats" && n.URL == ""
}

func (a *app) supervisorClient() *daemon.Client {
	return daemon.NewClient(daemon.ClientConfig{Home: a.env.Home, Exe: companion.Self(), Env: a.supervisorEnv(),
		NATS: a.embeddedNATS()})
}

// openJob opens the session that runs a supervisor job: the launching session's
// configuration, no transcript of its own, the agent's transcript beside the launcher's.
func (a *app) openJob(ctx context.Context, j daemon.Job) (daemon.AgentRunner, error) {
	sess, err := a.openSession(ctx, j.Launch.Job(j.Agent.SessionID, j.Agent.SessionPath), a.seams())
	if err != nil {
		return nil, err
	}
	return jobSession{sess}, nil
}

// jobSession runs a supervisor job's agent in its session.
type jobSession struct{ *session.Session }

func (s jobSession) RunDetached(ctx context.Context, d subagent.DetachedAgent) (string, error) {
	return s.Agents().RunDetached(ctx, d)
}
