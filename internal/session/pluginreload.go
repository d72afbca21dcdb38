package session

import (
	"context"
	"fmt"
	"slices"

	"github.com/keel-dev/keel/internal/agentdef"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/mcphost"
	"github.com/keel-dev/keel/internal/plugin"
	"github.com/keel-dev/keel/internal/settings"
)

// reloadPlugins runs at the start of each Send, a request boundary: when a plugin was
// installed, enabled, disabled or removed since the set was loaded, the new set's hooks,
// commands, skills, agents and MCP servers replace the old ones before the request is
// assembled, and the cache watcher is told the prefix changes on purpose. Nothing is re-read
// while nothing changed, so the tool pool stays byte-stable.
func (p *Plugins) reloadPlugins(ctx context.Context) []event.Notice {
	s := p.s
	stamp := p.pluginStamp()
	if stamp == p.pluginState.stamp {
		return nil
	}
	p.pluginState.stamp = stamp
	st, _ := settings.Load(s.conf.settingsOptions())
	old := p.plugins()
	set := p.readPlugins(ctx, st.Plugins)
	s.mu.Lock()
	p.pluginState.set = set
	s.mu.Unlock()
	var notices []event.Notice
	for _, e := range set.Errors() {
		if !slices.Contains(old.Errors(), e) {
			notices = append(notices, pluginNotice(e))
		}
	}
	if set.Key() == old.Key() {
		return notices
	}
	for _, p := range s.hooks.SetPlugins(set.Hooks()) {
		notices = append(notices, event.Notice{Level: string(p.Severity), Text: p.Error()})
	}
	s.sk.Refresh()
	if s.agents != nil {
		if defs, err := agentdef.Load(ctx, s.conf.agentDefOptions()); err == nil {
			s.agents.runner.Definitions().Replace(defs)
		}
	}
	notices = append(notices, p.swapPluginServers(ctx, old.MCPServers(), set.MCPServers())...)
	if !slices.EqualFunc(old.LSPServers(), set.LSPServers(), func(a, b plugin.LSPServer) bool { return a.Name == b.Name }) {
		notices = append(notices, event.Notice{Level: "warn", Text: "the plugins' language servers changed; they apply from the next session"})
	}
	s.watch.Announce("plugins changed")
	notices = append(notices, event.Notice{Level: "info", Text: "plugins changed: " + pluginNames(set)})
	return notices
}

// swapPluginServers removes the servers of plugins that went and starts those of plugins that
// came; a server whose configuration changed is restarted.
func (p *Plugins) swapPluginServers(ctx context.Context, before, after []mcphost.ServerConfig) []event.Notice {
	s := p.s
	if len(before) == 0 && len(after) == 0 {
		return nil
	}
	if s.mcp == nil {
		return []event.Notice{{Level: "warn", Text: "the plugins' MCP servers changed; they start with the next session"}}
	}
	same := func(a, b mcphost.ServerConfig) bool {
		return a.Name == b.Name && a.Command == b.Command && slices.Equal(a.Args, b.Args) && a.URL == b.URL
	}
	var notices []event.Notice
	for _, o := range before {
		if !slices.ContainsFunc(after, func(n mcphost.ServerConfig) bool { return same(o, n) }) {
			if err := s.mcp.Remove(ctx, o.Name); err != nil {
				notices = append(notices, event.Notice{Level: "warn", Text: "MCP: " + err.Error()})
			}
		}
	}
	added := slices.DeleteFunc(slices.Clone(after), func(n mcphost.ServerConfig) bool {
		return slices.ContainsFunc(before, func(o mcphost.ServerConfig) bool { return same(o, n) })
	})
	for _, cfg := range mcphost.PolicyFrom(s.settings, s.conf.trusted()).Apply(added) {
		if err := s.mcp.Add(ctx, cfg, nil); err != nil {
			notices = append(notices, event.Notice{Level: "warn", Text: fmt.Sprintf("MCP server %q of a plugin: %v", cfg.Name, err)})
		}
	}
	return notices
}
