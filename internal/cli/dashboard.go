package cli

import (
	"context"
	"fmt"
	"net"

	"github.com/spf13/cobra"

	"github.com/keel-dev/keel/internal/browser"
	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/daemon"
	"github.com/keel-dev/keel/internal/dashboard"
	"github.com/keel-dev/keel/internal/team"
	"github.com/keel-dev/keel/internal/teamstore"
)

func (a *app) dashboardCommand() *cobra.Command {
	opts := &dashboardOptions{}
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "a live web page of this machine's sessions, teams and background agents",
		Long: `dashboard serves a web page that shows, updating live, the sessions on this machine with
their cost, tokens and prompt-cache economy per request; teams with their members, task
board, mail and waiting permission requests; and the supervisor's background agents. From
the page you can answer a teammate's permission request, message a teammate and stop a
background agent.

It listens on loopback and prints an address with a random token; without the token every
request is refused. --listen chooses another address (the token still guards it).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runDashboard(cmd.Context(), opts) },
	}
	cmd.Flags().StringVar(&opts.Listen, "listen", "127.0.0.1:0", "address to listen on (default: a free loopback port)")
	cmd.Flags().BoolVar(&opts.Open, "open", false, "open the page in the browser ($BROWSER)")
	return cmd
}

// dashboardOptions are `keel dashboard`'s.
type dashboardOptions struct {
	Listen string
	Open   bool
}

func (a *app) runDashboard(ctx context.Context, opts *dashboardOptions) error {
	if _, _, err := net.SplitHostPort(opts.Listen); err != nil {
		return usageError{fmt.Errorf("--listen %q is not host:port: %w", opts.Listen, err)}
	}
	srv, err := dashboard.Listen(ctx, opts.Listen, dashboard.Config{Home: a.env.Home, Teams: dashboardTeams{a}, Jobs: dashboardJobs{a.supervisorClient()}, Logger: a.logger})
	if err != nil {
		return err
	}
	fmt.Fprintf(a.std.Out, "keel dashboard: %s\n", srv.URL())
	if opts.Open {
		_ = browser.Open(a.getenv("BROWSER"), srv.URL())
	}
	return srv.Serve(ctx)
}

// dashboardTeams opens the teams of KEEL_HOME for the dashboard, as `keel team` does.
type dashboardTeams struct{ a *app }

func (d dashboardTeams) Names(ctx context.Context) []string {
	_, teams, _ := d.a.teams(ctx) // a store that cannot be listed shows no teams
	return teamstore.Names(teams)
}

func (d dashboardTeams) Open(ctx context.Context, name string) (dashboard.Team, error) {
	t, done, err := d.a.openTeam(ctx, name)
	if err != nil {
		return nil, err
	}
	return dashboardTeam{t, done}, nil
}

type dashboardTeam struct {
	t    *team.Team
	done func()
}

func (d dashboardTeam) Members(ctx context.Context) ([]team.MemberInfo, error) {
	return d.t.Members(ctx)
}
func (d dashboardTeam) Backend() coord.Backend { return d.t.Backend() }
func (d dashboardTeam) SendFromUser(ctx context.Context, to, text string) (string, error) {
	return d.t.SendFromUser(ctx, to, text)
}
func (d dashboardTeam) Answer(ctx context.Context, id string, allow bool, reason string) error {
	return d.t.AnswerRequest(ctx, id, allow, reason)
}
func (d dashboardTeam) Close() error {
	d.done()
	return nil
}

// dashboardJobs lists and stops the supervisor's background agents without starting it.
type dashboardJobs struct{ c *daemon.Client }

func (d dashboardJobs) List(ctx context.Context) ([]dashboard.Job, error) {
	st, err := d.c.Status(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]dashboard.Job, 0, len(st.Jobs))
	for _, j := range st.Jobs {
		out = append(out, dashboard.Job{ID: j.Agent.ID, Description: j.Agent.Description, AgentType: j.Agent.AgentType, SessionID: j.Agent.SessionID,
			State: string(j.State), Created: j.Created, Ended: j.Ended, Result: j.Result, Error: j.Error})
	}
	return out, nil
}

func (d dashboardJobs) Stop(ctx context.Context, id string) error { return d.c.Stop(ctx, id) }
