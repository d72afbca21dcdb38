package session

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/outputstyle"

	"github.com/keel-dev/keel/internal/agentdef"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/mcphost"
	"github.com/keel-dev/keel/internal/plugin"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/skill"
)

// Plugins returns the session's plugins.
func (s *Session) Plugins() *Plugins { return &s.plug }

// loadPlugins loads the --plugin-dir and SDK plugins and the enabled installed ones; each
// problem is a notice (and a plugin_errors entry of the init message).
func (p *Plugins) loadPlugins(ctx context.Context) {
	s := p.s
	p.pluginState.stamp = p.pluginStamp()
	set := p.readPlugins(ctx, s.settings.Plugins)
	s.mu.Lock()
	p.pluginState.set = set
	s.mu.Unlock()
	for _, e := range set.Errors() {
		s.notices = append(s.notices, pluginNotice(e))
	}
}

func (p *Plugins) readPlugins(ctx context.Context, st settings.Plugins) *plugin.Set {
	s := p.s
	_, env := mcpEnviron(s.opts.MCP)
	home := s.opts.Home
	if !s.opts.SDK.sourceAllowed("user") {
		home = "" // --setting-sources without user: no installed plugins either
	}
	return plugin.LoadSet(ctx, plugin.SetOptions{Home: home, Cwd: s.opts.Cwd, Dirs: s.opts.Plugins, Settings: st, Env: env, Logger: s.logger})
}

func pluginNotice(e plugin.Error) event.Notice {
	level := "warn"
	if e.Severity == plugin.SeverityError {
		level = "error"
	}
	return event.Notice{Level: level, Text: "plugin " + e.Plugin + ": " + e.Error()}
}

// plugins is the current set.
func (p *Plugins) plugins() *plugin.Set {
	s := p.s
	s.mu.Lock()
	defer s.mu.Unlock()
	return p.pluginState.set
}

// pluginStamp describes the files a change of plugins shows in: the settings files (for
// enabledPlugins) and the install records.
func (p *Plugins) pluginStamp() string {
	s := p.s
	if len(s.opts.Plugins) == 0 && s.opts.Home == "" {
		return ""
	}
	var files []string
	for _, f := range s.settings.Files {
		files = append(files, f.Path)
	}
	if s.opts.Home != "" {
		files = append(files, plugin.LayoutOf(s.opts.Home).Records()...)
	}
	var b strings.Builder
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			fmt.Fprintf(&b, "%s %d %d\n", f, st.Size(), st.ModTime().UnixNano())
		}
	}
	return b.String()
}

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
	cat, _ := skill.Load(s.sk.skillOptions())
	s.skills.Replace(cat)
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

func pluginNames(set *plugin.Set) string {
	var names []string
	for _, i := range set.Infos() {
		names = append(names, i.Source)
	}
	if len(names) == 0 {
		return "none loaded"
	}
	return strings.Join(names, ", ")
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

// bashEnviron is the Bash tool's environment: keel's, with the enabled plugins' bin/ folders
// first on PATH. Nil (inherit) when no plugin has one.
func (p *Plugins) bashEnviron() []string {
	bins := p.plugins().BinDirs()
	if len(bins) == 0 {
		return nil
	}
	env := os.Environ()
	path := strings.Join(bins, string(os.PathListSeparator))
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			env[i] = "PATH=" + path + string(os.PathListSeparator) + v
			return env
		}
	}
	return append(env, "PATH="+path)
}

// List lists the loaded plugins, as init.plugins does.
func (p *Plugins) List() []plugin.Info {
	return p.plugins().Infos()
}

// Errors are the problems of the loaded plugins, as init.plugin_errors lists them.
func (p *Plugins) Errors() []plugin.Error {
	return p.plugins().Errors()
}

// pluginOutputStyles are the plugins' output styles as styles the session can answer in
// (named plugin:style).
func pluginOutputStyles(set *plugin.Set) []outputstyle.Style {
	var out []outputstyle.Style
	for _, st := range set.OutputStyles() {
		out = append(out, outputstyle.Style{Name: st.Name, Description: st.Description, Prompt: st.Body,
			KeepCodingInstructions: st.KeepCodingInstructions, Source: st.Path})
	}
	return out
}

// initPlugins is the init event's plugins and plugin_errors.
func initPlugins(set *plugin.Set) ([]event.PluginInfo, []event.PluginError) {
	infos := []event.PluginInfo{}
	for _, i := range set.Infos() {
		infos = append(infos, event.PluginInfo{Name: i.Name, Path: i.Path, Version: i.Version, Source: i.Source})
	}
	var errs []event.PluginError
	for _, e := range set.Errors() {
		errs = append(errs, event.PluginError{Plugin: e.Plugin, Type: e.Type, Message: e.SDKMessage(), Path: e.Path})
	}
	return infos, errs
}

// pluginLSP are the plugins' language servers as settings values, beside the settings' own.
func pluginLSP(set *plugin.Set) map[string]settings.Value[settings.LSPServer] {
	out := map[string]settings.Value[settings.LSPServer]{}
	for _, l := range set.LSPServers() {
		out[l.Name] = l.Server
	}
	return out
}
