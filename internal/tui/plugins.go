package tui

import (
	"context"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
)

// /plugin: the installed plugins and the marketplaces they come from, managed as `keel
// plugin` manages them.

// PluginInfo is one installed plugin as /plugin lists it.
type PluginInfo struct {
	ID, Version string
	Enabled     bool
	// EnabledFrom is the settings file that decides Enabled, "" when none names it.
	EnabledFrom string
}

// MarketplaceInfo is one known marketplace as /plugin marketplace lists it.
type MarketplaceInfo struct {
	Name, Source string
	Plugins      int
	Note         string
}

// PluginManager is a backend that manages plugins (/plugin). Changes reach the session at
// its next request, as they do from `keel plugin` in another terminal. Install may ask
// nothing: a plugin that runs code is installed only when yes is set, and the error
// otherwise says so.
type PluginManager interface {
	Plugins() ([]PluginInfo, error)
	EnablePlugin(id string, on bool) error
	InstallPlugin(ctx context.Context, id string, yes bool) (string, error)
	UninstallPlugin(id string) error
	PluginMarketplaces() ([]MarketplaceInfo, error)
	AddMarketplace(ctx context.Context, source string) (string, error)
}

const pluginUsage = "/plugin: list (a picker: enter switches one on or off) · install NAME@MARKETPLACE [yes] · " +
	"enable|disable|uninstall NAME@MARKETPLACE · marketplace [add SOURCE]"

func (m *Model) cmdPlugin(arg string) tea.Cmd {
	pm, ok := m.b.(PluginManager)
	if !ok {
		m.notice(unavailable("/plugin"))
		return nil
	}
	words := strings.Fields(arg)
	if len(words) == 0 || words[0] == "list" {
		return m.pluginPicker(pm)
	}
	verb, rest := words[0], words[1:]
	one := func() (string, bool) {
		if len(rest) != 1 {
			m.notice(pluginUsage)
			return "", false
		}
		return rest[0], true
	}
	switch verb {
	case "install", "i":
		if len(rest) == 0 || len(rest) > 2 || (len(rest) == 2 && rest[1] != "yes") {
			m.notice(pluginUsage)
			return nil
		}
		id, yes := rest[0], len(rest) == 2
		return func() tea.Msg {
			text, err := pm.InstallPlugin(context.Background(), id, yes)
			return cmdDoneMsg{what: text, err: err}
		}
	case "enable", "disable":
		if id, ok := one(); ok {
			return later(verb+"d "+id+" (from the next prompt)", func(context.Context) error { return pm.EnablePlugin(id, verb == "enable") })
		}
	case "uninstall", "remove":
		if id, ok := one(); ok {
			return later("uninstalled "+id, func(context.Context) error { return pm.UninstallPlugin(id) })
		}
	case "marketplace", "marketplaces":
		return m.cmdMarketplace(pm, rest)
	default:
		m.notice(pluginUsage)
	}
	return nil
}

// pluginPicker lists the installed plugins; enter switches the chosen one on or off.
func (m *Model) pluginPicker(pm PluginManager) tea.Cmd {
	list, err := pm.Plugins()
	if err != nil {
		m.errorf("plugins: " + err.Error())
		return nil
	}
	if len(list) == 0 {
		m.notice("No plugins installed. /plugin marketplace add SOURCE adds a marketplace (a folder, a git URL, owner/repo); " +
			"/plugin install NAME@MARKETPLACE installs from it.")
		return nil
	}
	items := make([]string, len(list))
	for i, p := range list {
		state := "off"
		if p.Enabled {
			state = "on "
		}
		version := p.Version
		if version == "" {
			version = "-"
		}
		items[i] = fmt.Sprintf("%s  %-40s %s", state, p.ID, version)
	}
	m.picker = newPicker("Plugins: enter switches one on or off", items, 0, func(i int) tea.Cmd {
		p := list[i]
		verb := "enabled"
		if p.Enabled {
			verb = "disabled"
		}
		return later(verb+" "+p.ID+" (from the next prompt)", func(context.Context) error { return pm.EnablePlugin(p.ID, !p.Enabled) })
	})
	m.picker.search = func(i int, q string) bool { return strings.Contains(strings.ToLower(list[i].ID), q) }
	return nil
}

func (m *Model) cmdMarketplace(pm PluginManager, args []string) tea.Cmd {
	if len(args) == 2 && args[0] == "add" {
		src := args[1]
		return func() tea.Msg {
			text, err := pm.AddMarketplace(context.Background(), src)
			return cmdDoneMsg{what: text, err: err}
		}
	}
	if len(args) > 0 && args[0] != "list" {
		m.notice(pluginUsage)
		return nil
	}
	infos, err := pm.PluginMarketplaces()
	if err != nil {
		m.errorf("marketplaces: " + err.Error())
		return nil
	}
	if len(infos) == 0 {
		m.notice("No marketplaces. /plugin marketplace add SOURCE adds one (a folder, a marketplace.json, a git URL, owner/repo).")
		return nil
	}
	var b strings.Builder
	b.WriteString("Marketplaces")
	for _, i := range infos {
		fmt.Fprintf(&b, "\n  %-24s %3d plugins  %s", i.Name, i.Plugins, i.Source)
		if i.Note != "" {
			b.WriteString("  (" + i.Note + ")")
		}
	}
	m.notice(b.String())
	return nil
}
