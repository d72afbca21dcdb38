package cli

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/keel-dev/keel"
	"github.com/keel-dev/keel/internal/acp"
)

// acpCommand is `keel acp`: keel as an Agent Client Protocol agent on stdin and stdout, for
// editors that start it as a subprocess. stdout carries the protocol only; logs go to
// stderr (--debug) or a file (--debug-file).
func (a *app) acpCommand() *cobra.Command {
	var (
		opts      keel.Options
		debug     bool
		debugFile string
	)
	cmd := &cobra.Command{
		Use:   "acp",
		Short: "serve the Agent Client Protocol on stdin/stdout (for Zed, JetBrains IDEs, Neovim…)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, closeLog, err := acpLogger(a.std.Err, debug, debugFile)
			if err != nil {
				return err
			}
			defer closeLog()
			opts.Home, opts.Getenv, opts.Logger = a.env.Home, a.getenv, logger
			if opts.Cwd, err = os.Getwd(); err != nil {
				return err
			}
			return acp.Run(cmd.Context(), acp.Config{In: a.std.In, Out: a.std.Out, Options: opts, Version: Version, Logger: logger})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Model, "model", "", "model id or alias (opus, sonnet, haiku…) of new sessions")
	fl.StringVar(&opts.PermissionMode, "permission-mode", "", "permission mode of new sessions: default, acceptEdits, plan, dontAsk, bypassPermissions")
	fl.StringArrayVar(&opts.Settings, "settings", nil, "extra settings: a JSON file or a JSON object (repeatable)")
	fl.StringArrayVar(&opts.MCPConfig, "mcp-config", nil, "MCP servers for every session, .mcp.json's shape: a file or JSON (repeatable)")
	fl.BoolVar(&debug, "debug", false, "log to stderr")
	fl.StringVar(&debugFile, "debug-file", "", "log to this file")
	return cmd
}

// acpLogger is the log of an ACP server: never stdout, which belongs to the protocol.
func acpLogger(stderr io.Writer, debug bool, file string) (*slog.Logger, func(), error) {
	switch {
	case file != "":
		f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, nil, usageError{fmt.Errorf("--debug-file: %w", err)}
		}
		return slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug})), func() { f.Close() }, nil
	case debug:
		return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug})), func() {}, nil
	}
	return discardLogger(), func() {}, nil
}
