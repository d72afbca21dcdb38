package cli

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/keel-dev/keel/internal/plugin"
	"github.com/keel-dev/keel/internal/settings"
)

// pluginManager is the plugin manager of the current directory: its settings' plugin keys
// (the workspace's only once it is trusted) and keel's home.
func (a *app) pluginManager(yes bool) (*plugin.Manager, error) {
	cwd, root, err := workDirs()
	if err != nil {
		return nil, err
	}
	st, _ := settings.Load(settings.Options{Env: settings.Env{Home: a.env.Home}, ProjectDir: root})
	return &plugin.Manager{Home: a.env.Home, Cwd: cwd, Settings: st.Plugins, Confirm: a.confirmPlugin(yes)}, nil
}

// sessionPlugins is the set of installed plugins a session in root would load, for the
// listings (keel agents, skills, mcp list) to show what plugins bring.
func (a *app) sessionPlugins(ctx context.Context, cwd, root string) *plugin.Set {
	st, _ := settings.Load(settings.Options{Env: settings.Env{Home: a.env.Home}, ProjectDir: root})
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return plugin.LoadSet(ctx, plugin.SetOptions{Home: a.env.Home, Cwd: cwd, Settings: st.Plugins, Env: env})
}

// confirmPlugin asks on the terminal whether to install a plugin that runs code; --yes agrees
// beforehand, and without a terminal and --yes the answer is no.
func (a *app) confirmPlugin(yes bool) func(plugin.ConsentRequest) (bool, error) {
	return func(req plugin.ConsentRequest) (bool, error) {
		what := strings.Join(req.Runs, ", ")
		if yes {
			fmt.Fprintf(a.std.Err, "%s runs code (%s); installing it as --yes says\n", req.Plugin, what)
			return true, nil
		}
		if !isTerminal(a.std.In) {
			return false, fmt.Errorf("%s runs code (%s): confirm with --yes to install it", req.Plugin, what)
		}
		fmt.Fprintf(a.std.Err, "%s runs code on this machine: %s.\nInstall it? [y/N] ", req.Plugin, what)
		line, _ := bufio.NewReader(a.std.In).ReadString('\n')
		answer := strings.ToLower(strings.TrimSpace(line))
		return answer == "y" || answer == "yes", nil
	}
}

func (a *app) pluginCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugin",
		Short: "manage Claude Code plugins and the marketplaces they come from",
	}
	var yes, asJSON bool
	install := &cobra.Command{
		Use:   "install NAME@MARKETPLACE",
		Short: "install a plugin from a marketplace and enable it (asks once when it runs code)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := a.pluginManager(yes)
			if err != nil {
				return err
			}
			rec, err := m.Install(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(a.std.Out, "installed %s %s in %s\n", rec.ID(), cmpVersion(rec.Version), rec.InstallPath)
			return nil
		},
	}
	install.Flags().BoolVarP(&yes, "yes", "y", false, "agree to install a plugin that runs code without asking")
	list := &cobra.Command{
		Use:   "list",
		Short: "list installed plugins",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := a.pluginManager(false)
			if err != nil {
				return err
			}
			plugins, err := m.List()
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.std.Out, plugins)
			}
			tw := tabwriter.NewWriter(a.std.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PLUGIN\tVERSION\tENABLED\tSOURCE")
			for _, p := range plugins {
				fmt.Fprintf(tw, "%s\t%s\t%v\t%s\n", p.ID(), cmpVersion(p.Version), p.Enabled, p.Source)
			}
			if len(plugins) == 0 {
				fmt.Fprintln(tw, "(no plugins installed)")
			}
			return tw.Flush()
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	byID := func(use, short, done string, run func(m *plugin.Manager, cmd *cobra.Command, id string) error) *cobra.Command {
		return &cobra.Command{
			Use: use + " NAME@MARKETPLACE", Short: short, Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				m, err := a.pluginManager(yes)
				if err != nil {
					return err
				}
				if err := run(m, cmd, args[0]); err != nil {
					return err
				}
				fmt.Fprintf(a.std.Out, "%s %s\n", done, args[0])
				if v, ok := m.Settings.Enabled[args[0]]; ok && v.From.Scope != settings.ScopeUser && (use == "enable" || use == "disable") {
					fmt.Fprintf(a.std.Err, "note: %s sets enabledPlugins for it too (%s), and wins over your user settings\n", v.From.Path, v.From)
				}
				return nil
			},
		}
	}
	update := byID("update", "install the newest version of a plugin (fetching its marketplace again)", "updated",
		func(m *plugin.Manager, cmd *cobra.Command, id string) error {
			_, err := m.Update(cmd.Context(), id)
			return err
		})
	update.Flags().BoolVarP(&yes, "yes", "y", false, "agree without asking if the new version runs more code")
	cmd.AddCommand(install, list, update,
		byID("enable", "enable an installed plugin (sessions pick it up at their next request)", "enabled",
			func(m *plugin.Manager, _ *cobra.Command, id string) error { return m.Enable(id) }),
		byID("disable", "disable an installed plugin (sessions drop it at their next request)", "disabled",
			func(m *plugin.Manager, _ *cobra.Command, id string) error { return m.Disable(id) }),
		byID("uninstall", "remove an installed plugin and its data folder", "uninstalled",
			func(m *plugin.Manager, _ *cobra.Command, id string) error { return m.Uninstall(id) }),
		a.pluginValidateCommand(), a.pluginMarketplaceCommand())
	return cmd
}

func (a *app) pluginValidateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "validate PATH",
		Short: "check a plugin or marketplace folder (or its plugin.json / marketplace.json) as claude plugin validate does",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reports, err := plugin.Validate(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			plugin.WriteText(a.std.Out, reports)
			for _, r := range reports {
				if !r.OK() {
					return exitCodeError{code: exitError}
				}
			}
			return nil
		},
	}
}

func (a *app) pluginMarketplaceCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "marketplace", Short: "add, list, update and remove plugin marketplaces"}
	var asJSON bool
	add := &cobra.Command{
		Use:   "add SOURCE",
		Short: "add a marketplace: a folder, a marketplace.json, a git URL (#ref) or owner/repo (#ref or @sha)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := a.pluginManager(false)
			if err != nil {
				return err
			}
			cat, err := m.AddMarketplace(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(a.std.Out, "added marketplace %s (%d plugins)\n", cat.Name, len(cat.Entries))
			return nil
		},
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "list known marketplaces",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := a.pluginManager(false)
			if err != nil {
				return err
			}
			infos, err := m.Marketplaces()
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.std.Out, infos)
			}
			tw := tabwriter.NewWriter(a.std.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "MARKETPLACE\tSOURCE\tPLUGINS\tNOTE")
			for _, i := range infos {
				note := i.Problem
				if i.FromSettings {
					note = "from extraKnownMarketplaces; fetched on first install"
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", i.Name, plugin.SourceString(i.Source), i.Plugins, note)
			}
			if len(infos) == 0 {
				fmt.Fprintln(tw, "(no marketplaces)")
			}
			return tw.Flush()
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	remove := &cobra.Command{
		Use:   "remove NAME",
		Short: "forget a marketplace and uninstall its plugins",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := a.pluginManager(false)
			if err != nil {
				return err
			}
			removed, err := m.RemoveMarketplace(args[0])
			for _, id := range removed {
				fmt.Fprintf(a.std.Out, "uninstalled %s\n", id)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(a.std.Out, "removed marketplace %s\n", args[0])
			return nil
		},
	}
	update := &cobra.Command{
		Use:   "update NAME",
		Short: "fetch a marketplace again (a commit pin stays where it is)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := a.pluginManager(false)
			if err != nil {
				return err
			}
			cat, err := m.UpdateMarketplace(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(a.std.Out, "updated marketplace %s (%d plugins)\n", cat.Name, len(cat.Entries))
			return nil
		},
	}
	cmd.AddCommand(add, list, remove, update)
	return cmd
}

func cmpVersion(v string) string {
	if v == "" {
		return "-"
	}
	return v
}
