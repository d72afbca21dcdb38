package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/keel-dev/keel/internal/provider/connect"
	"github.com/keel-dev/keel/internal/session"
	"github.com/keel-dev/keel/internal/transcript"
)

// agentsResumeCommand is `keel agents resume ID "message"`: SendMessage from the shell. It
// finds the session the subagent belongs to in this directory, resumes it and continues the
// subagent from its transcript.
func (a *app) agentsResumeCommand() *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "resume AGENT_ID MESSAGE",
		Short: "continue a subagent from its transcript with a new message",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, msg := args[0], args[1]
			if err := transcript.CheckID(id); err != nil {
				return usageError{fmt.Errorf("agent id %q: %w", id, err)}
			}
			opts := a.sessionOptions(f)
			cwd := opts.Cwd
			if cwd == "" {
				var err error
				if cwd, err = os.Getwd(); err != nil {
					return err
				}
			}
			sessions, err := transcript.List(transcript.ProjectDir(a.env.Home, cwd))
			if err != nil {
				return err
			}
			for _, s := range sessions {
				path, _ := transcript.AgentPaths(s.Path, id)
				if _, err := os.Stat(path); err == nil {
					opts.Resume = s.ID
					break
				}
			}
			if opts.Resume == "" {
				return errors.New("no session in this directory has an agent " + id)
			}
			cfg := a.connectConfig(cmd.Context(), f)
			prov, model, err := connect.Open(cfg, a.getenv)
			if err != nil {
				return err
			}
			opts.Provider, opts.Model, opts.Models = prov, model, cfg.Models
			opts.PlanModel = connect.PlanModel(cfg, a.getenv)
			sess, err := session.New(cmd.Context(), opts)
			if err != nil {
				return err
			}
			defer sess.Close()
			text, err := sess.ResumeAgent(cmd.Context(), id, msg)
			if err != nil {
				return exitCodeError{code: exitError, err: err}
			}
			fmt.Fprintln(a.std.Out, strings.TrimRight(text, "\n"))
			return nil
		},
	}
	f.register(cmd)
	return cmd
}
