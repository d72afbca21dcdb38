package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"

	"github.com/keel-dev/keel/internal/procgroup"
	"github.com/keel-dev/keel/internal/runconfig"
	"github.com/keel-dev/keel/internal/sandbox"
	"github.com/keel-dev/keel/internal/session"
	"github.com/keel-dev/keel/internal/settings"
)

// sandboxFlags are the flags `keel doctor` and `keel sandbox` share: the sandbox a session
// started here with them would use.
type sandboxFlags struct {
	mode    string
	addDirs []string
	trust   bool
}

func (f *sandboxFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.mode, "sandbox", "", "sandbox mode: "+strings.Join(sandbox.Modes, ", ")+" (default: workspace-write where the machine supports it, unless sandbox.enabled is false)")
	cmd.Flags().StringArrayVar(&f.addDirs, "add-dir", nil, "additional working directory (writable in workspace-write)")
	cmd.Flags().BoolVar(&f.trust, "trust", false, "trust this workspace for this run")
}

// sandbox builds the sandbox from the settings a session here would load.
func (a *app) sandbox(f *sandboxFlags) (*sandbox.Sandbox, error) {
	cfg, st, err := a.sandboxConfig(f)
	if err != nil {
		return nil, err
	}
	return session.NewSandbox(cfg, st)
}

// sandboxConfig is the configuration and settings of the session whose sandbox f describes.
func (a *app) sandboxConfig(f *sandboxFlags) (runconfig.Config, *settings.Settings, error) {
	if f.mode != "" && !contains(sandbox.Modes, f.mode) {
		return runconfig.Config{}, nil, usageError{fmt.Errorf("--sandbox %q is not one of %s", f.mode, strings.Join(sandbox.Modes, ", "))}
	}
	cwd, root, err := workDirs()
	if err != nil {
		return runconfig.Config{}, nil, err
	}
	st, _ := settings.Load(settings.Options{Env: settings.Env{Home: a.env.Home}, ProjectDir: root, Trust: f.trust})
	return runconfig.Config{Cwd: cwd, Home: a.env.Home, Sandbox: f.mode, AddDirs: f.addDirs}, st, nil
}

// doctorCommand is `keel doctor`: what this machine supports for the sandbox, and what keel
// will use here.
func (a *app) doctorCommand() *cobra.Command {
	opts := &doctorOptions{}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "check what this machine supports (user namespaces, Landlock, seccomp, bubblewrap) and what the sandbox allows here",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return a.runDoctor(cmd.Context(), opts) },
	}
	opts.register(cmd)
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

// doctorOptions are `keel doctor`'s: the sandbox to check, and the output form.
type doctorOptions struct {
	sandboxFlags
	JSON bool
}

func (a *app) runDoctor(ctx context.Context, opts *doctorOptions) error {
	cfg, st, err := a.sandboxConfig(&opts.sandboxFlags)
	if err != nil {
		return err
	}
	findings, err := session.SandboxDoctor(ctx, cfg, st)
	if err != nil {
		return err
	}
	if opts.JSON {
		enc := json.NewEncoder(a.std.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(findings)
	}
	failed := false
	for _, x := range findings {
		fmt.Fprintf(a.std.Out, "%-5s sandbox  %-17s %s\n", x.Status, x.Name, x.Detail)
		failed = failed || x.Status == "fail"
	}
	if failed {
		return exitCodeError{code: exitError}
	}
	return nil
}

// sandboxCommand is `keel sandbox -- CMD…`: one command under the configured sandbox
// (workspace-write when the settings leave it off), so a user can see why something fails.
func (a *app) sandboxCommand() *cobra.Command {
	opts := &sandboxOptions{}
	cmd := &cobra.Command{
		Use:   "sandbox [flags] -- COMMAND [ARG...]",
		Short: "run one command in the sandbox a session here would use",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Command = args
			return a.runSandbox(cmd.Context(), opts)
		},
	}
	opts.register(cmd)
	return cmd
}

// sandboxOptions are `keel sandbox`'s: the sandbox, and the command to run in it.
type sandboxOptions struct {
	sandboxFlags
	Command []string
}

func (a *app) runSandbox(ctx context.Context, opts *sandboxOptions) error {
	if opts.mode == "" {
		opts.mode = string(sandbox.ModeWorkspaceWrite)
	}
	sb, err := a.sandbox(&opts.sandboxFlags)
	if err != nil {
		return err
	}
	if !sb.Policy().Enabled() {
		return usageError{errors.New("--sandbox off runs nothing in a sandbox")}
	}
	c := exec.CommandContext(ctx, opts.Command[0], opts.Command[1:]...)
	c.Stdin, c.Stdout, c.Stderr = a.std.In, a.std.Out, a.std.Err
	c.Env = sandbox.WithoutCredentials(nil) // what a session's Bash would see
	confine := sb.Confine
	if in, ok := a.std.In.(*os.File); ok && procgroup.IsTerminal(in) && procgroup.Foreground(in) {
		// Typed at a terminal, in its foreground: the command keeps the terminal (an
		// interactive shell, a prompt), in the group the user's shell gave keel's job.
		confine = func(c *exec.Cmd, _ ...string) (*sandbox.Run, error) { return sb.ConfineAtTerminal(c) }
	} else {
		// A group of its own, as the Bash tool's commands have: kill(0) inside would otherwise
		// reach keel and the script that started it, whatever the PID namespace. On Linux
		// Confine makes it a session of its own too, so that a terminal keel was merely
		// handed (a background job, a script's) is not the command's to read.
		procgroup.Own(c)
	}
	run, err := confine(c)
	if err != nil {
		return err
	}
	err = c.Run()
	for _, r := range run.Release() {
		fmt.Fprintln(a.std.Err, "keel sandbox: connection refused by the proxy: "+r)
	}
	for _, p := range run.Planted() {
		fmt.Fprintln(a.std.Err, "keel sandbox: "+p)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return exitCodeError{code: ee.ExitCode()}
	}
	return err
}
