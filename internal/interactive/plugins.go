package interactive

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/keel-dev/keel"
	"github.com/keel-dev/keel/internal/plugin"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/tui"
)

// /plugin manages plugins through internal/plugin's Manager, as `keel plugin` does: the
// same records under keel's directory and the same enabledPlugins in the user's settings, so
// the session (and any other) picks a change up at its next request.

var _ tui.PluginManager = (*backend)(nil)

// pluginManager is the manager for this session's workspace: its plugin settings (the
// workspace's once it is trusted) and keel's directory; yes agrees to install a plugin that
// runs code.
func (b *backend) pluginManager(yes bool) (*plugin.Manager, error) {
	home := keel.DataDir(b.opts)
	if home == "" {
		return nil, fmt.Errorf("plugins need keel's directory (KEEL_HOME or HOME)")
	}
	cwd := b.s().Cwd()
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		cwd = wd
	}
	root := cwd
	if w, err := keel.InspectWorkspace(b.opts); err == nil {
		root = w.Dir
	}
	st, _ := settings.Load(settings.Options{Env: settings.Env{Home: home}, ProjectDir: root})
	confirm := func(req plugin.ConsentRequest) (bool, error) {
		if yes {
			return true, nil
		}
		return false, fmt.Errorf("%s runs code on this machine (%s): /plugin install %s yes installs it anyway",
			req.Plugin, strings.Join(req.Runs, ", "), req.Plugin)
	}
	return &plugin.Manager{Home: home, Cwd: cwd, Settings: st.Plugins, Confirm: confirm}, nil
}

// Plugins lists the installed plugins.
func (b *backend) Plugins() ([]tui.PluginInfo, error) {
	m, err := b.pluginManager(false)
	if err != nil {
		return nil, err
	}
	list, err := m.List()
	if err != nil {
		return nil, err
	}
	out := make([]tui.PluginInfo, len(list))
	for i, p := range list {
		out[i] = tui.PluginInfo{ID: p.ID(), Version: p.Version, Enabled: p.Enabled, EnabledFrom: p.EnabledFrom}
	}
	return out, nil
}

// EnablePlugin switches an installed plugin on or off in the user's settings.
func (b *backend) EnablePlugin(id string, on bool) error {
	m, err := b.pluginManager(false)
	if err != nil {
		return err
	}
	if on {
		return m.Enable(id)
	}
	return m.Disable(id)
}

// InstallPlugin installs and enables id (NAME@MARKETPLACE, or NAME in one marketplace).
func (b *backend) InstallPlugin(ctx context.Context, id string, yes bool) (string, error) {
	m, err := b.pluginManager(yes)
	if err != nil {
		return "", err
	}
	rec, err := m.Install(ctx, id)
	if err != nil {
		return "", err
	}
	version := rec.Version
	if version == "" {
		version = "-"
	}
	return fmt.Sprintf("installed %s %s (from the next prompt)", rec.ID(), version), nil
}

// UninstallPlugin removes an installed plugin and its data.
func (b *backend) UninstallPlugin(id string) error {
	m, err := b.pluginManager(false)
	if err != nil {
		return err
	}
	return m.Uninstall(id)
}

// PluginMarketplaces lists the known marketplaces.
func (b *backend) PluginMarketplaces() ([]tui.MarketplaceInfo, error) {
	m, err := b.pluginManager(false)
	if err != nil {
		return nil, err
	}
	infos, err := m.Marketplaces()
	if err != nil {
		return nil, err
	}
	out := make([]tui.MarketplaceInfo, len(infos))
	for i, in := range infos {
		note := in.Problem
		if in.FromSettings {
			note = "from extraKnownMarketplaces; fetched on first install"
		}
		out[i] = tui.MarketplaceInfo{Name: in.Name, Source: plugin.SourceString(in.Source), Plugins: in.Plugins, Note: note}
	}
	return out, nil
}

// AddMarketplace adds a marketplace: a folder, a marketplace.json, a git URL or owner/repo.
func (b *backend) AddMarketplace(ctx context.Context, source string) (string, error) {
	m, err := b.pluginManager(false)
	if err != nil {
		return "", err
	}
	cat, err := m.AddMarketplace(ctx, source)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("added marketplace %s (%d plugins)", cat.Name, len(cat.Entries)), nil
}
