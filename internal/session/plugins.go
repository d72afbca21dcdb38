package session

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/keel-dev/keel/internal/outputstyle"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/plugin"
	"github.com/keel-dev/keel/internal/settings"
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
