package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/keel-dev/keel/internal/companion"
	"github.com/keel-dev/keel/internal/daemon"
	"github.com/keel-dev/keel/internal/lazy"
	"github.com/keel-dev/keel/internal/runconfig"
	"github.com/keel-dev/keel/internal/session"
	"github.com/keel-dev/keel/internal/team"
	"github.com/keel-dev/keel/internal/teamstore"
)

// workerCmd is `keel worker --team T`: this host joins a team by itself — through NATS when
// the team lives there — claims tasks from its board and runs a teammate's loop here, with
// this host's tools and files, until the lead shuts the team down.
func (a *app) workerCmd() *cobra.Command {
	opts := &workerOptions{}
	cmd := &cobra.Command{
		Use:   "worker --team TEAM [--name NAME]",
		Short: "join an agent team from this host: claim tasks from its board and work on them here",
		Long: `keel worker joins the team TEAM as a member of its own: it claims the next task of the team's
board, works on it with this host's tools in its working directory (--cwd), reports to the lead,
and claims the next, until the lead shuts the team down. The lead sees it in ListAgents and its
UI like a local teammate; its permission questions go to the lead.

Workers on other hosts reach the team through NATS: set coordination.backend "nats" and
coordination.url (or KEEL_NATS_URL) on every host, the lead's included. If the worker dies, its
task goes back to the board when its claim's lease lapses and another member finishes it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runWorker(cmd.Context(), opts)
		},
	}
	opts.register(cmd)
	ownFlagsHelp(cmd)
	cmd.Flags().StringVar(&opts.Team, "team", "", "the team to join")
	cmd.Flags().StringVar(&opts.Name, "name", "", "this worker's member name (default: from the host name and process id)")
	cmd.Flags().BoolVar(&opts.Resume, "resume-member", false, "continue a stopped member of that name from its transcript, when it is on this host")
	return cmd
}

// workerOptions are `keel worker`'s: the run flags, the team, this member's name and whether
// it continues a stopped member.
type workerOptions struct {
	runFlags
	Team, Name string
	Resume     bool
}

func (a *app) runWorker(ctx context.Context, opts *workerOptions) error {
	if opts.Team == "" {
		return usageError{errors.New("keel worker needs --team (the lead's team name: keel team list, or --team-name when the lead starts)")}
	}
	if opts.Name == "" {
		opts.Name = defaultWorkerName()
	}
	cfg, err := opts.config(a)
	if err != nil {
		return err
	}
	cfg = cfg.Teammate(runconfig.Worker{Team: opts.Team, Member: opts.Name, Resume: opts.Resume, Remote: true})
	return a.runTeammate(ctx, cfg, func() {
		fmt.Fprintf(a.std.Err, "keel: worker %s joined team %s\n", opts.Name, opts.Team)
	})
}

var unsafeName = lazy.Regexp{Expr: `[^A-Za-z0-9_-]+`}

func defaultWorkerName() string {
	host, _ := os.Hostname()
	host = strings.Trim(unsafeName.Get().ReplaceAllString(strings.Split(host, ".")[0], "-"), "-")
	if host == "" {
		host = "host"
	}
	if len(host) > 40 {
		host = host[:40]
	}
	return fmt.Sprintf("worker-%s-%d", host, os.Getpid())
}

// coordinationOptions are how this process's teams reach NATS.
func (a *app) coordinationOptions() teamstore.Options {
	return teamstore.Options{NATSURL: a.env.NATSURL, Name: "keel " + Version,
		LocalNATS: func(ctx context.Context) (string, error) {
			return session.LocalNATS(ctx, daemon.ClientConfig{Home: a.env.Home, Exe: companion.Self(), Env: a.supervisorEnv()})
		}}
}

// openTeam opens team name for `keel team`, on the backend settings choose.
func (a *app) openTeam(ctx context.Context, name string) (*team.Team, func(), error) {
	_, root, err := workDirs()
	if err != nil {
		return nil, nil, err
	}
	return teamstore.Look(ctx, teamstore.LookOptions{Home: a.env.Home, Name: name, ProjectDir: root, Options: a.coordinationOptions()})
}
