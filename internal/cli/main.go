// Package cli is keel's command line: the cobra tree, one file per command. Exit codes are
// decided here and nowhere else.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/keel-dev/keel/internal/acp"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/runconfig"
	"github.com/keel-dev/keel/internal/session"
)

// Version is keel's version, set at build time with -ldflags "-X …cli.Version=…".
var Version = "0.1.0-dev"

// Streams are the process's standard streams.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
}

// Exit codes (README, "Exit status").
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
	// exitDenied ends a headless run that finished while some of the model's tool calls were
	// denied: nobody could approve them, so its answer may claim work that was not done.
	exitDenied = 3
)

// usageError marks a mistake in how keel was called.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// exitCodeError carries a specific exit code (a run that ended in error).
type exitCodeError struct {
	code int
	err  error
	// result is the failed run's result, when a run failed.
	result *event.Result
}

func (e exitCodeError) Error() string { return e.err.Error() }

// Main runs keel with args and returns the process exit code. getenv is the environment; it
// is read here and passed down, never consulted deeper in the tree.
func Main(args []string, std Streams, getenv func(string) string) int {
	return MainWith(args, std, getenv, nil)
}

// MainWith is Main with the terminal UI linked in (cmd/keel-tui); interactive may be nil.
func MainWith(args []string, std Streams, getenv func(string) string, interactive Interactive) int {
	// The version needs none of the command tree: answered first, `keel --version` costs no
	// more than the process's start (building the tree touches about 1 MiB more).
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-v") {
		fmt.Fprintf(std.Out, "%s (keel)\n", Version)
		return exitOK
	}
	ctx, stop := signalContext(std.Err)
	defer stop()
	app := &app{std: std, env: runconfig.ReadEnv(getenv), getenv: getenv, interactive: interactive}
	return app.main(ctx, args)
}

// main runs the command line args and returns the exit code: the one place exit codes are
// decided.
func (a *app) main(ctx context.Context, args []string) int {
	root := a.rootCommand()
	root.SetArgs(resumeWithoutValue(expandListFlags(args)))
	root.SetIn(a.std.In)
	root.SetOut(a.std.Out)
	root.SetErr(a.std.Err)
	err := root.ExecuteContext(ctx)
	if code, sig, ok := signalExit(ctx); ok {
		// The run ended in order (tools killed, transcript synced, result written); the
		// status says what ended it, whatever the run made of the cancellation.
		fmt.Fprintln(a.std.Err, "keel: "+sig.Error())
		return code
	}
	if err == nil {
		return exitOK
	}
	var ec exitCodeError
	if errors.As(err, &ec) {
		if ec.err != nil && ec.err.Error() != "" {
			fmt.Fprintln(a.std.Err, "keel: "+ec.err.Error())
		}
		return ec.code
	}
	fmt.Fprintln(a.std.Err, "keel: "+err.Error())
	var ue usageError
	if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown ") || strings.Contains(err.Error(), "flag") {
		return exitUsage
	}
	return exitError
}

// app holds what every command shares.
type app struct {
	std Streams
	// env is keel's environment, read once; getenv reads the rest (provider credentials).
	env         runconfig.Env
	getenv      func(string) string
	interactive Interactive
	// logger is the run's debug log (--debug, --debug-file); it discards by default.
	logger *slog.Logger
	// open, when set, opens sessions instead of session.Open (tests watch what reaches it).
	open func(ctx context.Context, cfg runconfig.Config, seams session.Seams) (*session.Session, error)
	// acp, when set, serves `keel acp` instead of acp.Run (tests watch what reaches it).
	acp func(ctx context.Context, cfg acp.Config) error
}

func (a *app) rootCommand() *cobra.Command {
	f := &runFlags{}
	root := &cobra.Command{
		Use:           "keel [prompt]",
		Short:         "keel is a coding agent for the terminal and a Go library",
		Long:          rootLong,
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.maxTurnsSet = cmd.Flags().Changed("max-turns")
			if !f.print {
				if err := commandTypo(cmd, args); err != nil {
					return err
				}
			}
			return a.runRoot(cmd.Context(), f, args)
		},
	}
	root.SetVersionTemplate("{{.Version}} (keel)\n")
	f.register(root)
	root.AddCommand(a.demoCommand(), a.scriptedCommand(), a.modelsCommand())
	root.AddCommand(a.infoCommands()...)
	root.AddCommand(a.sessionsCommand(), a.rewindCommand(), a.mcpCommand(), a.teamCommand())
	root.AddCommand(a.supervisorCommand(), a.workerCmd(), a.cronCommand(), a.loopCommand())
	root.AddCommand(a.acpCommand())
	root.AddCommand(a.pluginCommand())
	root.AddCommand(a.dashboardCommand())
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(a.doctorCommand(), a.sandboxCommand())
	guardSubcommands(root)
	return root
}
