package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/keel-dev/keel/internal/runconfig"
	"github.com/keel-dev/keel/internal/transcript"
)

// agentsResumeCommand is `keel agents resume ID "message"`: SendMessage from the shell. It
// finds the session the subagent belongs to in this directory, resumes it and continues the
// subagent from its transcript.
func (a *app) agentsResumeCommand() *cobra.Command {
	opts := &agentsResumeOptions{}
	cmd := &cobra.Command{
		Use:   "resume AGENT_ID MESSAGE",
		Short: "continue a subagent from its transcript with a new message",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.AgentID, opts.Message = args[0], args[1]
			return a.runAgentsResume(cmd.Context(), opts)
		},
	}
	opts.register(cmd)
	ownFlagsHelp(cmd)
	return cmd
}

// agentsResumeOptions are `keel agents resume`'s: the run flags, the subagent and the message.
type agentsResumeOptions struct {
	runFlags
	AgentID, Message string
}

func (a *app) runAgentsResume(ctx context.Context, opts *agentsResumeOptions) error {
	if err := transcript.CheckID(opts.AgentID); err != nil {
		return usageError{fmt.Errorf("agent id %q: %w", opts.AgentID, err)}
	}
	cfg, err := opts.config(a)
	if err != nil {
		return err
	}
	if cfg.Resume, err = a.sessionOfAgent(cfg.Cwd, opts.AgentID); err != nil {
		return err
	}
	cfg.Supervisor = runconfig.Supervisor{}
	sess, err := a.openSession(ctx, cfg, a.seams())
	if err != nil {
		return err
	}
	defer sess.Close()
	text, err := sess.Agents().Resume(ctx, opts.AgentID, opts.Message)
	if err != nil {
		return exitCodeError{code: exitError, err: err}
	}
	fmt.Fprintln(a.std.Out, strings.TrimRight(text, "\n"))
	return nil
}

// sessionOfAgent finds the session in directory cwd (empty: the working directory) that
// has the subagent id.
func (a *app) sessionOfAgent(cwd, id string) (string, error) {
	if cwd == "" {
		var err error
		if cwd, err = os.Getwd(); err != nil {
			return "", err
		}
	}
	sessions, err := transcript.ListDirs(transcript.ProjectDirs(a.env.SessionHomes(a.env.Home, false), cwd))
	if err != nil {
		return "", err
	}
	for _, s := range sessions {
		path, _ := transcript.AgentPaths(s.Path, id)
		if _, err := os.Stat(path); err == nil {
			return s.ID, nil
		}
	}
	return "", errors.New("no session in this directory has an agent " + id)
}
