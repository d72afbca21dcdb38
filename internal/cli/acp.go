package cli

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/keel-dev/keel/internal/acp"
	"github.com/keel-dev/keel/internal/runconfig"
)

// acpCommand is `keel acp`: keel as an Agent Client Protocol agent on stdin and stdout, for
// editors that start it as a subprocess. stdout carries the protocol only; logs go to
// stderr (--debug) or a file (--debug-file). It takes the run flags: they configure every
// session the editor opens, as they configure a run's.
func (a *app) acpCommand() *cobra.Command {
	opts := &acpOptions{}
	cmd := &cobra.Command{
		Use:   "acp",
		Short: "serve the Agent Client Protocol on stdin/stdout (for Zed, JetBrains IDEs, Neovim…)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runACP(cmd.Context(), opts)
		},
	}
	opts.register(cmd)
	ownFlagsHelp(cmd)
	return cmd
}

// acpOptions are `keel acp`'s: the run flags.
type acpOptions struct{ runFlags }

func (a *app) runACP(ctx context.Context, opts *acpOptions) error {
	if err := opts.validate(); err != nil {
		return err
	}
	logger, closeLog, err := opts.sdk.logger(a.std.Err)
	if err != nil {
		return err
	}
	defer closeLog()
	a.logger = logger
	cfg, err := a.acpConfig(&opts.runFlags)
	if err != nil {
		return err
	}
	lib, err := a.libraryOptions(cfg)
	if err != nil {
		return err
	}
	// The server adds to these per session (the client's cwd, directories and MCP
	// servers), so it reads them from the options.
	lib.Home, lib.Cwd, lib.AddDirs, lib.MCPConfig = cfg.Home, cfg.Cwd, cfg.AddDirs, cfg.MCP.Configs
	run := a.acp
	if run == nil {
		run = acp.Run
	}
	return run(ctx, acp.Config{In: a.std.In, Out: a.std.Out, Options: lib, Version: Version, Logger: logger})
}

// acpConfig is the configuration of every session an editor opens: the run flags, less what
// the client chooses per session (which stored session, with what id) and the supervisor's
// hand-off (the editor keeps keel running while its agents work).
func (a *app) acpConfig(f *runFlags) (runconfig.Config, error) {
	cfg, err := a.runConfig(f)
	if err != nil {
		return cfg, err
	}
	cfg.Resume, cfg.Continue, cfg.ForkSession, cfg.ResumeSessionAt, cfg.SessionID = "", false, false, "", ""
	cfg.Supervisor = runconfig.Supervisor{}
	if cfg.Cwd == "" {
		if cfg.Cwd, err = os.Getwd(); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}
