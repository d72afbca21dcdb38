package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/keel-dev/keel/internal/agentdef"
	"github.com/keel-dev/keel/internal/memory"
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
	var asJSON bool
	jsonFlag := func(c *cobra.Command) *cobra.Command {
		c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
		return c
	}
	config := &cobra.Command{
		Use:   "config",
		Short: "show the merged settings and the file each value comes from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, root, err := workDirs()
			if err != nil {
				return err
			}
			// Show what a session here would use: an untrusted workspace's widening keys are
			// listed as ignored, not as settings (Load decides trust).
			st, _ := settings.Load(settings.Options{Env: settings.Env{Home: a.env.Home}, ProjectDir: root})
			if asJSON {
				return st.RenderJSON(a.std.Out)
			}
			return st.RenderText(a.std.Out)
		},
	}
	trustCmd := &cobra.Command{
		Use:   "trust [DIR]",
		Short: "trust a project directory: its settings may widen permissions, its hooks, MCP servers and skill commands run",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, dir, err := workDirs()
			if err != nil {
				return err
			}
			if len(args) == 1 {
				if dir, err = filepath.Abs(args[0]); err != nil {
					return err
				}
			}
			if err := trust.Grant(a.env.Home, dir); err != nil {
				return err
			}
			fmt.Fprintf(a.std.Out, "trusted %s\n", dir)
			return nil
		},
	}
	agents := &cobra.Command{
		Use:   "agents",
		Short: "list agent definitions with their source files and overrides",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, root, err := workDirs()
			if err != nil {
				return err
			}
			cwd, _, _ := workDirs()
			set, err := agentdef.Load(cmd.Context(), agentdef.Options{ProjectDir: root, HomeDir: userHomeDir(), KeelHome: a.env.Home,
				Plugins: a.sessionPlugins(cmd.Context(), cwd, root).AgentSources()})
			if err != nil {
				return err
			}
			if asJSON {
				return set.List().WriteJSON(a.std.Out)
			}
			return set.List().WriteText(a.std.Out, root, userHomeDir())
		},
	}
	skills := &cobra.Command{
		Use:   "skills",
		Short: "list skills and custom commands with their source",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cwd, root, err := workDirs()
			if err != nil {
				return err
			}
			cat, problems := skill.Load(skill.Options{Cwd: cwd, ProjectRoot: root, Home: userHomeDir(), KeelHome: a.env.Home,
				Plugins: a.sessionPlugins(cmd.Context(), cwd, root).SkillSources()})
			if asJSON {
				return skill.RenderJSON(a.std.Out, cat.All(), problems)
			}
			return skill.RenderText(a.std.Out, cat.All(), problems)
		},
	}
	mem := &cobra.Command{
		Use:   "memory",
		Short: "list the memory files (KEEL.md, CLAUDE.md, AGENTS.md…) loaded here, in order",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.showMemory(cmd.Context(), asJSON)
		},
	}
	agents.AddCommand(a.agentsResumeCommand())
	out := []*cobra.Command{jsonFlag(config), trustCmd, jsonFlag(agents), jsonFlag(skills), jsonFlag(mem)}
	return out
}

func (a *app) showMemory(ctx context.Context, asJSON bool) error {
	cwd, _, err := workDirs()
	if err != nil {
		return err
	}
	set, err := memory.Load(memory.Options{Cwd: cwd, Home: userHomeDir(), KeelHome: a.env.Home})
	if err != nil {
		return err
	}
	r := memory.NewReport(set)
	if asJSON {
		return r.WriteJSON(a.std.Out)
	}
	return r.WriteText(a.std.Out)
}
