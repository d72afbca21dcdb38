package cli

import (
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
the job at its next request. A supervisor that was down runs each job's missed ticks once.`,
		Args: cobra.NoArgs,
	}
	var all, asJSON bool
	list := &cobra.Command{
		Use: "list", Short: "list the scheduled jobs of this directory (--all: every project's)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			store, err := a.supervisorClient().CronStore()
			if err != nil {
				return err
			}
			var jobs []cron.Job
			if all {
				jobs, err = store.List(cmd.Context())
			} else {
				cwd, _, werr := workDirs()
				if werr != nil {
					return werr
				}
				jobs, err = store.ListProject(cmd.Context(), cwd)
			}
			if err != nil && len(jobs) == 0 {
				return err
			}
			listed := cron.ListJobs(jobs)
			if asJSON {
				enc := json.NewEncoder(a.std.Out)
				enc.SetIndent("", "  ")
				if jerr := enc.Encode(map[string]any{"jobs": listed}); jerr != nil {
					return jerr
				}
			} else {
				fmt.Fprintln(a.std.Out, cron.FormatList(listed))
			}
			return err // the jobs that could not be read, after those that could
		},
	}
	list.Flags().BoolVar(&all, "all", false, "every project's jobs")
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	del := &cobra.Command{
		Use: "delete ID", Aliases: []string{"rm"}, Short: "delete a scheduled job (a run going on finishes and reports)",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			store, err := a.supervisorClient().CronStore()
			if err != nil {
				return err
			}
			j, err := store.Delete(cmd.Context(), args[0])
			if errors.Is(err, cron.ErrNotFound) {
				return fmt.Errorf("no scheduled job %s; keel cron list --all shows them", args[0])
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(a.std.Out, "deleted scheduled job %s (%q)\n", j.ID, j.Prompt)
			return nil
		},
	}
	cmd.AddCommand(list, del)
	return cmd
}
