package session

import (
	"context"

	"github.com/keel-dev/keel/internal/agentdef"
	"github.com/keel-dev/keel/internal/mcphost"
	"github.com/keel-dev/keel/internal/pluginset"
	"github.com/keel-dev/keel/internal/settings"
)

// Plugins are the session's plugins (internal/pluginset): loaded when it opens, read again at
// a request boundary when their records or settings changed, their MCP servers swapped then.
type Plugins = pluginset.Set

// Plugins returns the session's plugins.
func (s *Session) Plugins() *Plugins { return s.plug }

// openPlugins loads the --plugin-dir and SDK plugins and the enabled installed ones, and
// wires a reload to the session's hooks, skills, agents, MCP servers and cache watcher; each
// problem is a notice (and a plugin_errors entry of the init message).
func openPlugins(ctx context.Context, s *Session) *pluginset.Set {
	_, env := mcpEnviron(s.opts.MCP)
	var files []string
	for _, f := range s.settings.Files {
		files = append(files, f.Path)
	}
	p := pluginset.New(ctx, pluginset.Config{
		Home: s.opts.Home, NoInstalled: !s.opts.SDK.sourceAllowed("user"),
		Cwd: s.opts.Cwd, Dirs: s.opts.Plugins, Env: env,
		Settings: s.settings.Plugins, SettingsFiles: files,
		Reread: func() settings.Plugins {
			st, _ := settings.Load(s.conf.settingsOptions())
			return st.Plugins
		},
		SetHooks:      func(g []settings.HookGroup) []settings.Problem { return s.hooks.SetPlugins(s.pythonSafe(g)) },
		RefreshSkills: func() { s.sk.Refresh() },
		ReloadAgents: func(ctx context.Context) {
			if s.agents == nil {
				return
			}
			if defs, err := agentdef.Load(ctx, s.agentDefOptions()); err == nil {
				s.agents.runner.Definitions().Replace(defs)
			}
		},
		MCP: func() pluginset.Servers {
			if s.mcp == nil {
				return nil
			}
			return pluginServers{s.mcp}
		},
		Admit: func(c []mcphost.ServerConfig) []mcphost.ServerConfig {
			return s.mcpPolicy(s.opts.Cwd).Apply(c)
		},
		Announce: s.watch.Announce,
		Logger:   s.logger,
	})
	s.notices = append(s.notices, p.Notices()...)
	return p
}

// pluginServers starts the plugins' servers on the session's manager.
type pluginServers struct{ m *mcphost.Manager }

func (p pluginServers) Add(ctx context.Context, cfg mcphost.ServerConfig) error {
	return p.m.Add(ctx, cfg, nil)
}

func (p pluginServers) Remove(ctx context.Context, name string) error { return p.m.Remove(ctx, name) }
