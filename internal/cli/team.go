package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/provider/connect"
	"github.com/keel-dev/keel/internal/render"
	"github.com/keel-dev/keel/internal/session"
	"github.com/keel-dev/keel/internal/team"
)

// teamCommand is `keel team`: the teams under the keel directory, for scripts.
func (a *app) teamCommand() *cobra.Command {
	var teamName string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "team",
		Short: "agent teams: members, task boards and messages (list, tasks, messages, send)",
		Args:  cobra.NoArgs,
	}
	cmd.PersistentFlags().StringVar(&teamName, "team", "", "the team (default: the only one, or the most recent)")
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print JSON")
	open := func(ctx context.Context) (*team.Team, func(), error) {
		name := teamName
		if name == "" {
			names := session.TeamNames(a.env.Home)
			if len(names) == 0 {
				return nil, nil, fmt.Errorf("there are no teams in %s; teams start when a session with teams enabled spawns a teammate", session.TeamsDir(a.env.Home))
			}
			name = names[0]
		}
		return a.openTeam(ctx, name)
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "every team and its members with their state, colour and task",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			names := session.TeamNames(a.env.Home)
			if teamName != "" {
				names = []string{teamName}
			}
			all := map[string][]team.MemberInfo{}
			for _, name := range names {
				t, done, err := a.openTeam(cmd.Context(), name)
				if err != nil {
					return err
				}
				members, err := t.Members(cmd.Context())
				done()
				if err != nil && len(members) == 0 {
					return err
				}
				all[name] = members
			}
			if asJSON {
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
		},
	}
	tasks := &cobra.Command{
		Use:   "tasks",
		Short: "the team's task board",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, done, err := open(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			board, err := t.Backend().Board().List(cmd.Context())
			if err != nil && len(board) == 0 {
				return err
			}
			if asJSON {
				return writeJSON(a.std.Out, board)
			}
			_, werr := fmt.Fprintln(a.std.Out, team.FormatBoard(board, time.Now()))
			if err != nil {
				fmt.Fprintln(a.std.Err, "keel: warning: "+err.Error())
			}
			return werr
		},
	}
	messages := &cobra.Command{
		Use:   "messages [MEMBER]",
		Short: "the messages of a member (default: every member), delivered and unread",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, done, err := open(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			return a.showMessages(cmd.Context(), t, args, asJSON)
		},
	}
	send := &cobra.Command{
		Use:   "send MEMBER MESSAGE",
		Short: `send a message to a member ("team-lead" for the lead); it reads it at its next step`,
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, done, err := open(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			id, err := t.SendFromUser(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.std.Out, map[string]string{"id": id, "to": args[0], "team": t.Name()})
			}
			_, err = fmt.Fprintf(a.std.Out, "sent to %s in team %s (message %s)\n", args[0], t.Name(), id)
			return err
		},
	}
	cmd.AddCommand(list, tasks, messages, send, a.teamWorkerCommand())
	return cmd
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
// started by its lead. It prints the teammate's conversation (a tmux pane shows it).
func (a *app) teamWorkerCommand() *cobra.Command {
	f := &runFlags{}
	var teamName, member, leadTranscript string
	var resume bool
	cmd := &cobra.Command{
		Use:    "worker --team TEAM --member NAME",
		Short:  "run one teammate of a team (started by its lead)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if teamName == "" || member == "" {
				return usageError{errors.New("team worker needs --team and --member")}
			}
			return a.runTeamWorker(cmd.Context(), f, session.TeamWorker{Team: teamName, Member: member, Resume: resume, LeadTranscript: leadTranscript}, nil)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&teamName, "team", "", "the team to join")
	cmd.Flags().StringVar(&member, "member", "", "the member to run")
	cmd.Flags().StringVar(&leadTranscript, "lead-transcript", "", "the lead session's transcript (the teammate's goes beside it)")
	cmd.Flags().BoolVar(&resume, "resume-member", false, "continue the member from its transcript")
	return cmd
}

// workerCommand is how this process starts out-of-process teammates: keel team worker with
// the provider and permission flags of this run.
func (a *app) workerCommand(f *runFlags, model string) []string {
	exe := selfPath()
	if exe == "" {
		return nil
	}
	args := []string{exe, "team", "worker"}
	add := func(flag, v string) {
		if v != "" {
			args = append(args, flag, v)
		}
	}
	add("--model", model)
	add("--provider", f.providerName)
	add("--base-url", f.baseURL)
	// The worker works where the lead does, whatever directory tmux starts a pane in.
	cwd := f.cwd
	if cwd == "" {
		cwd, _ = os.Getwd()
	} else if abs, err := filepath.Abs(cwd); err == nil {
		cwd = abs
	}
	add("--cwd", cwd)
	add("--permission-mode", f.permissionMode)
	for _, s := range f.settings {
		add("--settings", s)
	}
	for _, t := range f.allowedTools {
		add("--allowedTools", t)
	}
	for _, t := range f.disallowedTools {
		add("--disallowedTools", t)
	}
	for _, d := range f.addDirs {
		add("--add-dir", d)
	}
	if f.skipPermissions {
		args = append(args, "--dangerously-skip-permissions")
	}
	if f.trust {
		args = append(args, "--trust")
	}
	return args
}

// selfPath is the program to start again as a worker: the path this process was started by
// when it has one (a link named keel keeps its name; os.Executable would resolve it), else
// where PATH finds it, else the executable itself.
func selfPath() string {
	if arg := os.Args[0]; strings.ContainsRune(arg, filepath.Separator) {
		if abs, err := filepath.Abs(arg); err == nil {
			return abs
		}
	} else if p, err := exec.LookPath(arg); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	exe, _ := os.Executable()
	return exe
}

// runTeamWorker runs one member's loop in this process, rendering its events as a conversation
// on stdout; joined, when set, runs once the session is up.
func (a *app) runTeamWorker(ctx context.Context, f *runFlags, w session.TeamWorker, joined func()) error {
	prov, model, err := connect.Open(connect.Config{Provider: f.providerName, Model: f.model, BaseURL: f.baseURL}, a.getenv)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	view := render.NewConversation(a.std.Out, false)
	opts := a.sessionOptions(f)
	opts.Provider, opts.Model = prov, model
	w.Events = func(e event.Event) {
		mu.Lock()
		defer mu.Unlock()
		_ = view.Render(e)
	}
	opts.Team.Worker = &w
	sess, err := session.New(ctx, opts)
	if err != nil {
		return err
	}
	defer sess.Close()
	if joined != nil {
		joined()
	}
	return sess.RunTeammate(ctx)
}
