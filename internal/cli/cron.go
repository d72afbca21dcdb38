package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/keel-dev/keel/internal/cron"
)

// cronCommand is `keel cron list|delete`: the scheduled jobs (CronCreate's) for people.
func (a *app) cronCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cron",
		Short: "list and delete scheduled jobs (the model makes them with CronCreate)",
		Long: `Scheduled jobs run a prompt on a cron expression or at one moment. The keel supervisor
runs them, also when no keel window is open, and each run reports into the session that made
the job at its next request. A supervisor that was down runs each job's missed ticks once.
The jobs of teams on NATS live on the NATS server and are listed and deleted here too.`,
		Args: cobra.NoArgs,
	}
	listOpts := &cronListOptions{}
	list := &cobra.Command{
		Use: "list", Short: "list the scheduled jobs of this directory (--all: every project's)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runCronList(cmd.Context(), listOpts) },
	}
	list.Flags().BoolVar(&listOpts.All, "all", false, "every project's jobs")
	list.Flags().BoolVar(&listOpts.JSON, "json", false, "print JSON")
	delOpts := &cronDeleteOptions{}
	del := &cobra.Command{
		Use: "delete ID", Aliases: []string{"rm"}, Short: "delete a scheduled job (a run going on finishes and reports)",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			delOpts.ID = args[0]
			return a.runCronDelete(cmd.Context(), delOpts)
		},
	}
	cmd.AddCommand(list, del)
	return cmd
}

// cronListOptions are `keel cron list`'s.
type cronListOptions struct{ All, JSON bool }

func (a *app) runCronList(ctx context.Context, opts *cronListOptions) error {
	store, err := a.supervisorClient().CronStore()
	if err != nil {
		return err
	}
	teams, release, terr := a.teamCronStores(ctx)
	defer release()
	var jobs []cron.Job
	var errs []error
	for _, st := range append([]*cron.Store{store}, teams...) {
		var some []cron.Job
		if opts.All {
			some, err = st.List(ctx)
		} else {
			cwd, _, werr := workDirs()
			if werr != nil {
				return werr
			}
			some, err = st.ListProject(ctx, cwd)
		}
		jobs, errs = append(jobs, some...), append(errs, err)
	}
	err = errors.Join(append(errs, terr)...)
	if err != nil && len(jobs) == 0 {
		return err
	}
	listed := cron.ListJobs(jobs)
	if opts.JSON {
		enc := json.NewEncoder(a.std.Out)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(map[string]any{"jobs": listed}); jerr != nil {
			return jerr
		}
	} else {
		fmt.Fprintln(a.std.Out, cron.FormatList(listed))
	}
	return err // the jobs that could not be read, after those that could
}

// cronDeleteOptions are `keel cron delete`'s: the job.
type cronDeleteOptions struct{ ID string }

func (a *app) runCronDelete(ctx context.Context, opts *cronDeleteOptions) error {
	store, err := a.supervisorClient().CronStore()
	if err != nil {
		return err
	}
	j, err := store.Delete(ctx, opts.ID)
	if errors.Is(err, cron.ErrNotFound) {
		// A team's job, on NATS?
		teams, release, terr := a.teamCronStores(ctx)
		defer release()
		for _, st := range teams {
			if j, err = st.Delete(ctx, opts.ID); !errors.Is(err, cron.ErrNotFound) {
				break
			}
		}
		if errors.Is(err, cron.ErrNotFound) && terr != nil {
			err = fmt.Errorf("%w (and the teams' jobs could not all be read: %v)", err, terr)
		}
	}
	if errors.Is(err, cron.ErrNotFound) {
		return fmt.Errorf("no scheduled job %s; keel cron list --all shows them", opts.ID)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(a.std.Out, "deleted scheduled job %s (%q)\n", j.ID, j.Prompt)
	return nil
}
