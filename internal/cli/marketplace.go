package cli

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/keel-dev/keel/internal/plugin"
)

// pluginMarketplaceCommand is `keel plugin marketplace`: where plugins come from.
func (a *app) pluginMarketplaceCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "marketplace", Short: "add, list, update and remove plugin marketplaces"}
	addOpts, listOpts, removeOpts, updateOpts := &marketplaceOptions{}, &marketplaceOptions{}, &marketplaceOptions{}, &marketplaceOptions{}
	add := &cobra.Command{
		Use:   "add SOURCE",
		Short: "add a marketplace: a folder, a marketplace.json, a git URL (#ref) or owner/repo (#ref or @sha)",
		Args:  cobra.ExactArgs(1),
		RunE:  marketplaceRun(addOpts, a.runMarketplaceAdd),
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "list known marketplaces",
		Args:  cobra.NoArgs,
		RunE:  marketplaceRun(listOpts, a.runMarketplaceList),
	}
	list.Flags().BoolVar(&listOpts.JSON, "json", false, "print JSON")
	remove := &cobra.Command{
		Use:   "remove NAME",
		Short: "forget a marketplace and uninstall its plugins",
		Args:  cobra.ExactArgs(1),
		RunE:  marketplaceRun(removeOpts, a.runMarketplaceRemove),
	}
	update := &cobra.Command{
		Use:   "update NAME",
		Short: "fetch a marketplace again (a commit pin stays where it is)",
		Args:  cobra.ExactArgs(1),
		RunE:  marketplaceRun(updateOpts, a.runMarketplaceUpdate),
	}
	cmd.AddCommand(add, list, remove, update)
	return cmd
}

// marketplaceOptions are what the marketplace commands take: the marketplace (its source
// for add, its name otherwise; none for list) and the output form.
type marketplaceOptions struct {
	Marketplace string
	JSON        bool
}

// marketplaceRun is a marketplace command's RunE: the argument into opts, then run.
func marketplaceRun(opts *marketplaceOptions, run func(context.Context, *marketplaceOptions) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 1 {
			opts.Marketplace = args[0]
		}
		return run(cmd.Context(), opts)
	}
}

func (a *app) runMarketplaceAdd(ctx context.Context, opts *marketplaceOptions) error {
	m, err := a.pluginManager(false)
	if err != nil {
		return err
	}
	cat, err := m.AddMarketplace(ctx, opts.Marketplace)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.std.Out, "added marketplace %s (%d plugins)\n", cat.Name, len(cat.Entries))
	return nil
}

func (a *app) runMarketplaceList(_ context.Context, opts *marketplaceOptions) error {
	m, err := a.pluginManager(false)
	if err != nil {
		return err
	}
	infos, err := m.Marketplaces()
	if err != nil {
		return err
	}
	if opts.JSON {
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
}

func (a *app) runMarketplaceRemove(_ context.Context, opts *marketplaceOptions) error {
	m, err := a.pluginManager(false)
	if err != nil {
		return err
	}
	removed, err := m.RemoveMarketplace(opts.Marketplace)
	for _, id := range removed {
		fmt.Fprintf(a.std.Out, "uninstalled %s\n", id)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(a.std.Out, "removed marketplace %s\n", opts.Marketplace)
	return nil
}

func (a *app) runMarketplaceUpdate(ctx context.Context, opts *marketplaceOptions) error {
	m, err := a.pluginManager(false)
	if err != nil {
		return err
	}
	cat, err := m.UpdateMarketplace(ctx, opts.Marketplace)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.std.Out, "updated marketplace %s (%d plugins)\n", cat.Name, len(cat.Entries))
	return nil
}
