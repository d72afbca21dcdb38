package pluginset

import (
	"context"
	"fmt"
	"slices"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/mcphost"
	"github.com/keel-dev/keel/internal/plugin"
	"github.com/keel-dev/keel/internal/settings"
)

// Reload runs at a request boundary: when a plugin was installed, enabled, disabled or
// removed since the set was loaded, the new set's hooks, commands, skills, agents and MCP
// servers replace the old ones before the request is assembled, and the cache watcher is
// told the prefix changes on purpose. Nothing is re-read while nothing changed, so the
// tool pool stays byte-stable. It returns what the user should be told.
func (p *Set) Reload(ctx context.Context) []event.Notice {
	stamp := p.stampNow()
	if stamp == p.stamp {
		return nil
	}
	p.stamp = stamp
	var st settings.Plugins
	if p.c.Reread != nil {
		st = p.c.Reread()
	}
	old := p.Current()
	set := p.read(ctx, st)
	p.mu.Lock()
	p.set = set
	p.mu.Unlock()
	var notices []event.Notice
	for _, e := range set.Errors() {
		if !slices.Contains(old.Errors(), e) {
			notices = append(notices, Notice(e))
		}
	}
	if set.Key() == old.Key() {
		return notices
	}
	if p.c.SetHooks != nil {
		for _, pr := range p.c.SetHooks(set.Hooks()) {
			notices = append(notices, event.Notice{Level: string(pr.Severity), Text: pr.Error()})
		}
	}
	if p.c.RefreshSkills != nil {
		p.c.RefreshSkills()
	}
	if p.c.ReloadAgents != nil {
		p.c.ReloadAgents(ctx)
	}
	notices = append(notices, p.swapServers(ctx, old.MCPServers(), set.MCPServers())...)
	if !slices.EqualFunc(old.LSPServers(), set.LSPServers(), func(a, b plugin.LSPServer) bool { return a.Name == b.Name }) {
		notices = append(notices, event.Notice{Level: "warn", Text: "the plugins' language servers changed; they apply from the next session"})
	}
	if p.c.Announce != nil {
		p.c.Announce("plugins changed")
	}
	notices = append(notices, event.Notice{Level: "info", Text: "plugins changed: " + names(set)})
	return notices
}

// swapServers removes the servers of plugins that went and starts those of plugins that
// came; a server whose configuration changed is restarted.
func (p *Set) swapServers(ctx context.Context, before, after []mcphost.ServerConfig) []event.Notice {
	if len(before) == 0 && len(after) == 0 {
		return nil
	}
	var mcp Servers
	if p.c.MCP != nil {
		mcp = p.c.MCP()
	}
	if mcp == nil {
		return []event.Notice{{Level: "warn", Text: "the plugins' MCP servers changed; they start with the next session"}}
	}
	same := func(a, b mcphost.ServerConfig) bool {
		return a.Name == b.Name && a.Command == b.Command && slices.Equal(a.Args, b.Args) && a.URL == b.URL
	}
	var notices []event.Notice
	for _, o := range before {
		if !slices.ContainsFunc(after, func(n mcphost.ServerConfig) bool { return same(o, n) }) {
			if err := mcp.Remove(ctx, o.Name); err != nil {
				notices = append(notices, event.Notice{Level: "warn", Text: "MCP: " + err.Error()})
			}
		}
	}
	added := slices.DeleteFunc(slices.Clone(after), func(n mcphost.ServerConfig) bool {
		return slices.ContainsFunc(before, func(o mcphost.ServerConfig) bool { return same(o, n) })
	})
	if p.c.Admit != nil {
		added = p.c.Admit(added)
	}
	for _, cfg := range added {
		if err := mcp.Add(ctx, cfg); err != nil {
			notices = append(notices, event.Notice{Level: "warn", Text: fmt.Sprintf("MCP server %q of a plugin: %v", cfg.Name, err)})
		}
	}
	return notices
}
