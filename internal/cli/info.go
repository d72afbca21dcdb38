package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/keel-dev/keel/internal/agentdef"
	"github.com/keel-dev/keel/internal/memory"
	"github.com/keel-dev/keel/internal/runconfig"
	"github.com/keel-dev/keel/internal/session"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/skill"
	"github.com/keel-dev/keel/internal/trust"
)

// workDirs returns the working directory and its project root.
func workDirs() (cwd, root string, err error) {
	cwd, err = os.Getwd()
	if err != nil {
		return "", "", fmt.Errorf("find working directory: %w", err)
	}
	return cwd, session.ProjectRoot(cwd), nil
}

func userHomeDir() string {
	h, _ := os.UserHomeDir()
	return h
}

func (a *app) infoCommands() []*cobra.Command {
	configOpts, agentsOpts, skillsOpts, memOpts := &infoOptions{}, &infoOptions{}, &infoOptions{}, &infoOptions{}
	config := &cobra.Command{
		Use:   "config",
		Short: "show the merged settings and the file each value comes from",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return a.runConfigShow(cmd.Context(), configOpts) },
	}
	trustOpts := &trustOptions{}
	trustCmd := &cobra.Command{
		Use:   "trust [DIR]",
		Short: "trust a project directory: its settings may widen permissions, its hooks, MCP servers and skill commands run",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				trustOpts.Dir = args[0]
				if trustOpts.Dir == "" {
					trustOpts.Dir = "." // as filepath.Abs reads "": the working directory
				}
			}
			return a.runTrust(cmd.Context(), trustOpts)
		},
	}
	agents := &cobra.Command{
		Use:   "agents",
		Short: "list agent definitions with their source files and overrides",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return a.runAgentsList(cmd.Context(), agentsOpts) },
	}
	skills := &cobra.Command{
		Use:   "skills",
		Short: "list skills and custom commands with their source",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return a.runSkills(cmd.Context(), skillsOpts) },
	}
	mem := &cobra.Command{
		Use:   "memory",
		Short: "list the memory files (KEEL.md, CLAUDE.md, AGENTS.md…) loaded here, in order",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return a.runMemory(cmd.Context(), memOpts) },
	}
	agents.AddCommand(a.agentsResumeCommand())
	return []*cobra.Command{configOpts.register(config), trustCmd, agentsOpts.register(agents), skillsOpts.register(skills), memOpts.register(mem)}
}

// infoOptions are what the listings (config, agents, skills, memory) take: the output form.
type infoOptions struct{ JSON bool }

func (o *infoOptions) register(cmd *cobra.Command) *cobra.Command {
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON")
	return cmd
}

func (a *app) runConfigShow(_ context.Context, opts *infoOptions) error {
	_, root, err := workDirs()
	if err != nil {
		return err
	}
	// Show what a session here would use: an untrusted workspace's widening keys are
	// listed as ignored, not as settings (Load decides trust).
	st, _ := settings.Load(settings.Options{Env: settings.Env{Home: a.env.Home}, ProjectDir: root})
	if opts.JSON {
		return st.RenderJSON(a.std.Out)
	}
	return st.RenderText(a.std.Out)
}

// trustOptions are `keel trust`'s: the directory, empty for this project's root.
type trustOptions struct{ Dir string }

func (a *app) runTrust(_ context.Context, opts *trustOptions) error {
	_, dir, err := workDirs()
	if err != nil {
		return err
	}
	if opts.Dir != "" {
		if dir, err = filepath.Abs(opts.Dir); err != nil {
			return err
		}
	}
	if err := trust.Grant(a.env.Home, dir); err != nil {
		return err
	}
	fmt.Fprintf(a.std.Out, "trusted %s\n", dir)
	return nil
}

func (a *app) runAgentsList(ctx context.Context, opts *infoOptions) error {
	_, root, err := workDirs()
	if err != nil {
		return err
	}
	cwd, _, _ := workDirs()
	set, err := agentdef.Load(ctx, agentdef.Options{ProjectDir: root, HomeDir: userHomeDir(), KeelHome: a.env.Home,
		Plugins: a.sessionPlugins(ctx, cwd, root).AgentSources()})
	if err != nil {
		return err
	}
	if opts.JSON {
		return set.List().WriteJSON(a.std.Out)
	}
	return set.List().WriteText(a.std.Out, root, userHomeDir())
}

func (a *app) runSkills(ctx context.Context, opts *infoOptions) error {
	cwd, root, err := workDirs()
	if err != nil {
		return err
	}
	cat, problems := skill.Load(skill.Options{Cwd: cwd, ProjectRoot: root, Home: userHomeDir(), KeelHome: a.env.Home,
		Plugins: a.sessionPlugins(ctx, cwd, root).SkillSources()})
	if opts.JSON {
		return skill.RenderJSON(a.std.Out, cat.All(), problems)
	}
	return skill.RenderText(a.std.Out, cat.All(), problems)
}

func (a *app) runMemory(_ context.Context, opts *infoOptions) error {
	cwd, root, err := workDirs()
	if err != nil {
		return err
	}
	// What a session here would load: its Read rules and the sandbox's masks leave out the
	// files they cover, listed as excluded.
	st, _ := settings.Load(settings.Options{Env: settings.Env{Home: a.env.Home}, ProjectDir: root})
	set, err := session.LoadMemory(runconfig.Config{Cwd: cwd, Home: a.env.Home}, st)
	if err != nil {
		return err
	}
	r := memory.NewReport(set)
	if opts.JSON {
		return r.WriteJSON(a.std.Out)
	}
	return r.WriteText(a.std.Out)
}
