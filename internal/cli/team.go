package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/render"
	"github.com/keel-dev/keel/internal/runconfig"
	"github.com/keel-dev/keel/internal/team"
	"github.com/keel-dev/keel/internal/teamstore"
)

// teamOptions are what every `keel team` command takes: the team and the output form.
type teamOptions struct {
	// Team is --team; empty means the newest team of the store.
	Team string
	JSON bool
}

// teamCommand is `keel team`: the teams of the store settings choose, for scripts.
func (a *app) teamCommand() *cobra.Command {
	opts := &teamOptions{}
	cmd := &cobra.Command{
		Use:   "team",
		Short: "agent teams: members, task boards and messages (list, tasks, messages, send)",
		Args:  cobra.NoArgs,
	}
	cmd.PersistentFlags().StringVar(&opts.Team, "team", "", "the team (default: the only one, or the most recent)")
	cmd.PersistentFlags().BoolVar(&opts.JSON, "json", false, "print JSON")
	cmd.AddCommand(
		&cobra.Command{Use: "list", Short: "every team and its members with their state, colour and task", Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error { return a.runTeamList(cmd.Context(), opts) }},
		&cobra.Command{Use: "tasks", Short: "the team's task board", Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error { return a.runTeamTasks(cmd.Context(), opts) }},
		&cobra.Command{Use: "messages [MEMBER]", Short: "the messages of a member (default: every member), delivered and unread",
			Args: cobra.MaximumNArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error { return a.runTeamMessages(cmd.Context(), opts, args) }},
		&cobra.Command{Use: "send MEMBER MESSAGE", Short: `send a message to a member ("team-lead" for the lead); it reads it at its next step`,
			Args: cobra.ExactArgs(2),
			RunE: func(cmd *cobra.Command, args []string) error {
				return a.runTeamSend(cmd.Context(), opts, args[0], args[1])
			}},
		a.teamWorkerCommand())
	return cmd
}

// lookAtTeam opens the team opts name — else the store's newest — for a look from outside.
func (a *app) lookAtTeam(ctx context.Context, opts *teamOptions) (*team.Team, func(), error) {
	name := opts.Team
	if name == "" {
		store, teams, err := a.teams(ctx)
		if err != nil {
			return nil, nil, err
		}
		if len(teams) == 0 {
			return nil, nil, fmt.Errorf("there are no teams in %s; teams start when a session with teams enabled spawns a teammate", store.Where())
		}
		name = teams[0].Name
	}
	return a.openTeam(ctx, name)
}

// runTeamList prints every team (or the one --team names) with its members.
func (a *app) runTeamList(ctx context.Context, opts *teamOptions) error {
	_, teams, err := a.teams(ctx)
	if err != nil {
		return err
	}
	names := teamstore.Names(teams)
	if opts.Team != "" {
		names = []string{opts.Team}
	}
	all := map[string][]team.MemberInfo{}
	for _, name := range names {
		t, done, err := a.openTeam(ctx, name)
		if err != nil {
			return err
		}
		members, err := t.Members(ctx)
		done()
		if err != nil && len(members) == 0 {
			return err
		}
		all[name] = members
	}
	if opts.JSON {
		return writeJSON(a.std.Out, all)
	}
	if len(names) == 0 {
		_, err := fmt.Fprintln(a.std.Out, "No teams.")
		return err
	}
	now := time.Now()
	for _, name := range names {
		fmt.Fprintf(a.std.Out, "%s\n", name)
		for _, m := range all[name] {
			fmt.Fprintf(a.std.Out, "  %s\n", m.Line(now))
		}
	}
	return nil
}

// runTeamTasks prints the team's board.
func (a *app) runTeamTasks(ctx context.Context, opts *teamOptions) error {
	t, done, err := a.lookAtTeam(ctx, opts)
	if err != nil {
		return err
	}
	defer done()
	board, err := t.Backend().Board().List(ctx)
	if err != nil && len(board) == 0 {
		return err
	}
	if opts.JSON {
		return writeJSON(a.std.Out, board)
	}
	_, werr := fmt.Fprintln(a.std.Out, team.FormatBoard(board, time.Now()))
	if err != nil {
		fmt.Fprintln(a.std.Err, "keel: warning: "+err.Error())
	}
	return werr
}

// runTeamMessages prints the messages of one member, or of every one.
func (a *app) runTeamMessages(ctx context.Context, opts *teamOptions, members []string) error {
	t, done, err := a.lookAtTeam(ctx, opts)
	if err != nil {
		return err
	}
	defer done()
	return a.showMessages(ctx, t, members, opts.JSON)
}

// runTeamSend sends text to member from the user.
func (a *app) runTeamSend(ctx context.Context, opts *teamOptions, member, text string) error {
	t, done, err := a.lookAtTeam(ctx, opts)
	if err != nil {
		return err
	}
	defer done()
	id, err := t.SendFromUser(ctx, member, text)
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(a.std.Out, map[string]string{"id": id, "to": member, "team": t.Name()})
	}
	_, err = fmt.Fprintf(a.std.Out, "sent to %s in team %s (message %s)\n", member, t.Name(), id)
	return err
}

type shownMessage struct {
	Member    string        `json:"member"`
	Delivered bool          `json:"delivered"`
	Message   coord.Message `json:"message"`
}

func (a *app) showMessages(ctx context.Context, t *team.Team, args []string, asJSON bool) error {
	var names []string
	if len(args) == 1 {
		names = args
	} else {
		members, _ := t.Members(ctx)
		for _, m := range members {
			names = append(names, m.Name)
		}
	}
	mb := t.Backend().Mailbox()
	var out []shownMessage
	for _, name := range names {
		if log, ok := mb.(coord.MailLog); ok {
			delivered, _ := log.Delivered(ctx, name, 0)
			for _, m := range delivered {
				out = append(out, shownMessage{name, true, m})
			}
		}
		unread, err := mb.Fetch(ctx, name, 0)
		if err != nil && len(unread) == 0 && !errors.Is(err, coord.ErrCorrupt) {
			return err
		}
		for _, m := range unread {
			out = append(out, shownMessage{name, false, m})
		}
	}
	if asJSON {
		if out == nil {
			out = []shownMessage{}
		}
		return writeJSON(a.std.Out, out)
	}
	for _, s := range out {
		state := "read"
		if !s.Delivered {
			state = "unread"
		}
		text := render.MessageText(s.Message.Text, s.Message.Data)
		kind := ""
		if s.Message.Type != "" && s.Message.Type != team.TypeMessage {
			kind = " (" + strings.ReplaceAll(s.Message.Type, "_", " ") + ")"
		}
		fmt.Fprintf(a.std.Out, "%s %s → %s (%s)%s: %s\n", s.Message.Sent.Local().Format(time.DateTime), s.Message.From, s.Member, state, kind, firstLine(text))
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// teamWorkerCommand is `keel team worker`: the process of one out-of-process teammate,
// started by its lead with --config, the lead's configuration. It prints the teammate's
// conversation (a tmux pane shows it).
func (a *app) teamWorkerCommand() *cobra.Command {
	opts := &teamWorkerOptions{}
	cmd := &cobra.Command{
		Use:    "worker --team TEAM --member NAME --config FILE",
		Short:  "run one teammate of a team (started by its lead)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runTeamWorker(cmd.Context(), opts)
		},
	}
	opts.register(cmd)
	ownFlagsHelp(cmd)
	cmd.Flags().StringVar(&opts.ConfigFile, "config", "", "the lead's run configuration (written by the lead; run flags are then ignored)")
	cmd.Flags().StringVar(&opts.Worker.Team, "team", "", "the team to join")
	cmd.Flags().StringVar(&opts.Worker.Member, "member", "", "the member to run")
	cmd.Flags().StringVar(&opts.Worker.LeadTranscript, "lead-transcript", "", "the lead session's transcript (the teammate's goes beside it)")
	cmd.Flags().BoolVar(&opts.Worker.Resume, "resume-member", false, "continue the member from its transcript")
	return cmd
}

// teamWorkerOptions are `keel team worker`'s: the run flags, or the lead's configuration in
// ConfigFile, and the member to run.
type teamWorkerOptions struct {
	runFlags
	ConfigFile string
	Worker     runconfig.Worker
}

func (a *app) runTeamWorker(ctx context.Context, opts *teamWorkerOptions) error {
	if opts.Worker.Team == "" || opts.Worker.Member == "" {
		return usageError{errors.New("team worker needs --team and --member")}
	}
	cfg, err := opts.config(a)
	if opts.ConfigFile != "" {
		cfg, err = runconfig.Read(opts.ConfigFile)
	}
	if err != nil {
		return err
	}
	return a.runTeammate(ctx, cfg.Teammate(opts.Worker), nil)
}

// runTeammate runs the team member cfg names in this process, rendering its events as a
// conversation on stdout; joined, when set, runs once the session is up.
func (a *app) runTeammate(ctx context.Context, cfg runconfig.Config, joined func()) error {
	var mu sync.Mutex
	view := render.NewConversation(a.std.Out, false)
	seams := a.seams()
	seams.WorkerEvents = func(e event.Event) {
		mu.Lock()
		defer mu.Unlock()
		_ = view.Render(e)
	}
	sess, err := a.openSession(ctx, cfg, seams)
	if err != nil {
		return err
	}
	defer sess.Close()
	if joined != nil {
		joined()
	}
	return sess.Team().RunTeammate(ctx)
}

// teams lists the teams of the store settings choose, newest first: the team directories, or
// the teams on the NATS server.
func (a *app) teams(ctx context.Context) (teamstore.Store, []coord.TeamInfo, error) {
	_, root, err := workDirs()
	if err != nil {
		return teamstore.Store{}, nil, err
	}
	return teamstore.Lister(ctx, a.env.Home, root, a.coordinationOptions())
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
