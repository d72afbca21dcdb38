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
	installOpts := &pluginOptions{}
	install := &cobra.Command{
		Use:   "install NAME@MARKETPLACE",
		Short: "install a plugin from a marketplace and enable it (asks once when it runs code)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			installOpts.ID = args[0]
			return a.runPluginInstall(cmd.Context(), installOpts)
		},
	}
	install.Flags().BoolVarP(&installOpts.Yes, "yes", "y", false, "agree to install a plugin that runs code without asking")
	listOpts := &pluginListOptions{}
	list := &cobra.Command{
		Use:   "list",
		Short: "list installed plugins",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return a.runPluginList(cmd.Context(), listOpts) },
	}
	list.Flags().BoolVar(&listOpts.JSON, "json", false, "print JSON")
	update, updateOpts := a.pluginByIDCmd("update", "install the newest version of a plugin (fetching its marketplace again)")
	update.Flags().BoolVarP(&updateOpts.Yes, "yes", "y", false, "agree without asking if the new version runs more code")
	enable, _ := a.pluginByIDCmd("enable", "enable an installed plugin (sessions pick it up at their next request)")
	disable, _ := a.pluginByIDCmd("disable", "disable an installed plugin (sessions drop it at their next request)")
	uninstall, _ := a.pluginByIDCmd("uninstall", "remove an installed plugin and its data folder")
	cmd.AddCommand(install, list, update, enable, disable, uninstall, a.pluginValidateCommand(), a.pluginMarketplaceCommand())
	return cmd
}

// pluginOptions are what the commands about one plugin take: the plugin, --yes, and which
// command it is (update, enable, disable, uninstall; install has a run function of its own).
type pluginOptions struct {
	ID   string
	Yes  bool
	verb string
}

func (a *app) runPluginInstall(ctx context.Context, opts *pluginOptions) error {
	m, err := a.pluginManager(opts.Yes)
	if err != nil {
		return err
	}
	rec, err := m.Install(ctx, opts.ID)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.std.Out, "installed %s %s in %s\n", rec.ID(), cmpVersion(rec.Version), rec.InstallPath)
	return nil
}

// pluginListOptions are `keel plugin list`'s.
type pluginListOptions struct{ JSON bool }

func (a *app) runPluginList(_ context.Context, opts *pluginListOptions) error {
	m, err := a.pluginManager(false)
	if err != nil {
		return err
	}
	plugins, err := m.List()
	if err != nil {
		return err
	}
	if opts.JSON {
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
}

// pluginByIDCmd builds `keel plugin VERB NAME@MARKETPLACE` for update, enable, disable and
// uninstall, which differ only in what they ask the manager.
func (a *app) pluginByIDCmd(verb, short string) (*cobra.Command, *pluginOptions) {
	opts := &pluginOptions{verb: verb}
	return &cobra.Command{
		Use: verb + " NAME@MARKETPLACE", Short: short, Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			return a.runPluginByID(cmd.Context(), opts)
		},
	}, opts
}

func (a *app) runPluginByID(ctx context.Context, opts *pluginOptions) error {
	m, err := a.pluginManager(opts.Yes)
	if err != nil {
		return err
	}
	var done string
	switch opts.verb {
	case "update":
		done = "updated"
		_, err = m.Update(ctx, opts.ID)
	case "enable":
		done, err = "enabled", m.Enable(opts.ID)
	case "disable":
		done, err = "disabled", m.Disable(opts.ID)
	case "uninstall":
		done, err = "uninstalled", m.Uninstall(opts.ID)
	default:
		return fmt.Errorf("no plugin command %q", opts.verb)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(a.std.Out, "%s %s\n", done, opts.ID)
	if v, ok := m.Settings.Enabled[opts.ID]; ok && v.From.Scope != settings.ScopeUser && (opts.verb == "enable" || opts.verb == "disable") {
		fmt.Fprintf(a.std.Err, "note: %s sets enabledPlugins for it too (%s), and wins over your user settings\n", v.From.Path, v.From)
	}
	return nil
}

func (a *app) pluginValidateCommand() *cobra.Command {
	opts := &pluginValidateOptions{}
	return &cobra.Command{
		Use:   "validate PATH",
		Short: "check a plugin or marketplace folder (or its plugin.json / marketplace.json) as claude plugin validate does",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Path = args[0]
			return a.runPluginValidate(cmd.Context(), opts)
		},
	}
}

// pluginValidateOptions are `keel plugin validate`'s: the folder or file to check.
type pluginValidateOptions struct{ Path string }

func (a *app) runPluginValidate(ctx context.Context, opts *pluginValidateOptions) error {
	reports, err := plugin.Validate(ctx, opts.Path)
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
}

func cmpVersion(v string) string {
	if v == "" {
		return "-"
	}
	return v
}
