package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/keel-dev/keel/internal/render"
	"github.com/keel-dev/keel/internal/runconfig"
	"github.com/keel-dev/keel/internal/session"
	"github.com/keel-dev/keel/internal/transcript"
)

// sessionsCommand is `keel sessions`: this directory's stored sessions.
func (a *app) sessionsCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "sessions", Short: "list, show, export and remove this directory's sessions"}
	cmd.AddCommand(a.sessionsListCmd(), a.sessionsShowCmd(), a.sessionsExportCmd(), a.sessionsRmCmd())
	return cmd
}

// sessionsDirs are where this directory's sessions are kept: under keel's directory and
// Claude Code's, where keel writes when a program drives it as Claude Code's CLI.
func (a *app) sessionsDirs() ([]string, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	return transcript.ProjectDirs(a.env.SessionHomes(a.env.Home, false), cwd), nil
}

// findSession finds the transcript of session id in this directory.
func (a *app) findSession(id string) (string, error) {
	dirs, err := a.sessionsDirs()
	if err != nil {
		return "", err
	}
	return transcript.FindIn(dirs, id)
}

// sessionsListOptions are `keel sessions list`'s.
type sessionsListOptions struct{ JSON bool }

func (a *app) sessionsListCmd() *cobra.Command {
	opts := &sessionsListOptions{}
	cmd := &cobra.Command{Use: "list", Short: "list sessions, newest first", Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return a.runSessionsList(opts) }}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func (a *app) runSessionsList(opts *sessionsListOptions) error {
	dirs, err := a.sessionsDirs()
	if err != nil {
		return err
	}
	sums, err := transcript.ListDirs(dirs)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if opts.JSON {
		if sums == nil {
			sums = []transcript.Summary{}
		}
		return json.NewEncoder(a.std.Out).Encode(sums)
	}
	tw := tabwriter.NewWriter(a.std.Out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUPDATED\tSIZE\tMESSAGES\tTITLE / FIRST PROMPT")
	for _, s := range sums {
		title := s.Title
		if title == "" {
			title = s.FirstPrompt
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", s.ID, s.Updated.Local().Format(time.DateTime), s.Size, s.Messages, oneLineCut(title, 60))
	}
	return tw.Flush()
}

// sessionsShowOptions are `keel sessions show`'s.
type sessionsShowOptions struct {
	ID   string
	JSON bool
}

func (a *app) sessionsShowCmd() *cobra.Command {
	opts := &sessionsShowOptions{}
	cmd := &cobra.Command{Use: "show ID", Short: "show a session's live conversation, with the message uuids rewind takes",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			return a.runSessionsShow(cmd.Context(), opts)
		}}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func (a *app) runSessionsShow(ctx context.Context, opts *sessionsShowOptions) error {
	path, err := a.findSession(opts.ID)
	if err != nil {
		return err
	}
	entries, err := transcript.Show(ctx, path)
	if err != nil {
		return err
	}
	if opts.JSON {
		return json.NewEncoder(a.std.Out).Encode(entries)
	}
	for _, e := range entries {
		text := e.Summary
		if e.Message != nil {
			text = render.MessageWords(*e.Message)
			if uses := e.Message.ToolUses(); len(uses) > 0 && text == "" {
				text = "[tool call: " + uses[0].Name + "]"
			}
		}
		fmt.Fprintf(a.std.Out, "%s  %-9s %s\n", e.UUID, e.Type, oneLineCut(text, 100))
	}
	return nil
}

// sessionsExportOptions are `keel sessions export`'s.
type sessionsExportOptions struct{ ID, Format string }

func (a *app) sessionsExportCmd() *cobra.Command {
	opts := &sessionsExportOptions{}
	cmd := &cobra.Command{Use: "export ID", Short: "export a session as Markdown or JSON", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			return a.runSessionsExport(cmd.Context(), opts)
		}}
	cmd.Flags().StringVar(&opts.Format, "format", "markdown", "markdown or json")
	return cmd
}

func (a *app) runSessionsExport(ctx context.Context, opts *sessionsExportOptions) error {
	if opts.Format != "markdown" && opts.Format != "md" && opts.Format != "json" {
		return usageError{fmt.Errorf("--format %q is not one of markdown, json", opts.Format)}
	}
	path, err := a.findSession(opts.ID)
	if err != nil {
		return err
	}
	st, err := transcript.Load(ctx, path)
	if err != nil {
		return err
	}
	if opts.Format == "json" {
		return transcript.ExportJSON(a.std.Out, st)
	}
	return transcript.ExportMarkdown(a.std.Out, st)
}

// sessionsRmOptions are `keel sessions rm`'s.
type sessionsRmOptions struct{ ID string }

func (a *app) sessionsRmCmd() *cobra.Command {
	opts := &sessionsRmOptions{}
	return &cobra.Command{Use: "rm ID", Short: "delete a session's transcript and file history", Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			opts.ID = args[0]
			return a.runSessionsRm(opts)
		}}
}

func (a *app) runSessionsRm(opts *sessionsRmOptions) error {
	path, err := a.findSession(opts.ID)
	if err != nil {
		return err
	}
	if err := transcript.Remove(path); err != nil {
		return err
	}
	fmt.Fprintf(a.std.Out, "removed %s\n", opts.ID)
	return nil
}

func (a *app) rewindCommand() *cobra.Command {
	opts := &rewindOptions{}
	cmd := &cobra.Command{
		Use:   "rewind SESSION --to MESSAGE_UUID",
		Short: "move a session back to before one of its user messages: files, conversation or both",
		Long: `rewind restores the working directory exactly as it was before the given user message
(see "keel sessions show") — what Write and Edit changed and what shell commands, builds and
git changed, from the session's shadow repository under keel's directory; ignored files are
left alone — and/or moves the conversation back to just before that message. Changes outside
the directory by shell commands or MCP tools cannot be undone: rewind lists them.
--diff only shows what the turn that message started changed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Session = args[0]
			return a.runRewind(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.To, "to", "", "uuid of the user message to go back to")
	cmd.Flags().BoolVar(&opts.Code, "code", false, "restore files only")
	cmd.Flags().BoolVar(&opts.Conversation, "conversation", false, "move the conversation only")
	cmd.Flags().BoolVar(&opts.Both, "both", false, "files and conversation (the default)")
	cmd.Flags().BoolVar(&opts.Diff, "diff", false, "show what the turn that message started changed, and rewind nothing")
	return cmd
}

// rewindOptions are `keel rewind`'s: the session, the user message to go back to, and what
// to move back.
type rewindOptions struct {
	Session, To                    string
	Code, Conversation, Both, Diff bool
}

func (a *app) runRewind(ctx context.Context, opts *rewindOptions) error {
	if opts.To == "" {
		return usageError{errors.New("--to MESSAGE_UUID is required")}
	}
	code, conversation := opts.Code, opts.Conversation
	if opts.Both || (!code && !conversation) {
		code, conversation = true, true
	}
	// A maintenance session: it sends nothing to a model, starts no MCP server and runs
	// no SessionStart or SessionEnd hooks.
	sess, err := a.openSession(ctx, runconfig.Config{Home: a.env.Home, Resume: opts.Session, Version: Version, Offline: true},
		session.Seams{Getenv: func(string) string { return "" }, APIKey: "unused-by-rewind", Logger: a.logger})
	if err != nil {
		return err
	}
	defer sess.Close()
	if opts.Diff {
		patch, err := sess.Undo().TurnDiff(ctx, opts.To)
		if err != nil {
			return err
		}
		_, err = io.WriteString(a.std.Out, patch)
		return err
	}
	rep, err := sess.Undo().Rewind(ctx, opts.To, code, conversation)
	a.writeRewind(rep, conversation)
	return err
}

// writeRewind says what a rewind restored, deleted and could not undo.
func (a *app) writeRewind(rep session.RewindReport, conversation bool) {
	for _, f := range rep.Files.Restored {
		fmt.Fprintf(a.std.Out, "restored %s\n", f)
	}
	for _, f := range rep.Files.Deleted {
		fmt.Fprintf(a.std.Out, "deleted  %s (created by the session)\n", f)
	}
	if sh := rep.Shadow; sh != nil {
		fmt.Fprintf(a.std.Out, "restored %s as it was before the message (shell changes included)\n", sh.Dir)
		for _, f := range sh.NotRestored {
			fmt.Fprintf(a.std.Out, "not restored: %s (too large to capture)\n", f)
		}
	}
	for _, u := range rep.Files.Unrecoverable {
		if rep.Shadow != nil {
			fmt.Fprintf(a.std.Out, "undone inside %s only: %s %s\n", rep.Shadow.Dir, u.Tool, oneLineCut(u.Description, 80))
			continue
		}
		fmt.Fprintf(a.std.Out, "cannot undo: %s %s\n", u.Tool, oneLineCut(u.Description, 80))
	}
	if conversation {
		fmt.Fprintf(a.std.Out, "conversation moved back %d messages\n", rep.Messages)
	}
}

func oneLineCut(s string, n int) string {
	r := []rune(s)
	for i, c := range r {
		if c == '\n' || c == '\r' || c == '\t' {
			r[i] = ' '
		}
	}
	if len(r) > n {
		return string(r[:n]) + "…"
	}
	return string(r)
}
