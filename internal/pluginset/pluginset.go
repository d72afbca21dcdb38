// Package pluginset is a session's plugins as it runs with them: loaded when the session
// opens, read again at a request boundary when their install records or the settings that
// enable them changed, the new set's hooks, skills, agents and MCP servers put in place of the
// old ones then, and their problems told as notices. Loading one plugin is internal/plugin's;
// this package keeps the set current.
//
// What it needs of the session it names in [Config], as fields and functions: the package
// knows no session, so a set can be built and tested on its own.
package pluginset

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/mcphost"
	"github.com/keel-dev/keel/internal/outputstyle"
	"github.com/keel-dev/keel/internal/plugin"
	"github.com/keel-dev/keel/internal/settings"
)

// Servers are the session's running MCP servers, which a reload changes; *[mcphost.Manager]
// is one through a one-line adapter (its Add takes a transport too).
type Servers interface {
	Add(ctx context.Context, cfg mcphost.ServerConfig) error
	Remove(ctx context.Context, name string) error
}

// Config is what a set needs. A nil function is a step a reload skips.
type Config struct {
	// Home is keel's home: its install records are watched for changes, and its installed
	// plugins load unless NoInstalled (--setting-sources without user).
	Home        string
	NoInstalled bool
	// Cwd resolves relative Dirs; Dirs are the plugins given by path (--plugin-dir, the SDK's).
	Cwd  string
	Dirs []plugin.DirSpec
	// Env is the environment ${VAR} in the plugins' MCP server entries expands from.
	Env map[string]string
	// Settings are the plugin settings the session opened with; SettingsFiles the files
	// they came from, watched for changes; Reread reads them again as the files say now.
	Settings      settings.Plugins
	SettingsFiles []string
	Reread        func() settings.Plugins

	// SetHooks puts the plugins' hooks in place of the old ones (hooks.Runner.SetPlugins).
	SetHooks func([]settings.HookGroup) []settings.Problem
	// RefreshSkills loads the skills and commands again, the plugins' among them.
	RefreshSkills func()
	// ReloadAgents loads the agent definitions again, the plugins' among them.
	ReloadAgents func(ctx context.Context)
	// MCP is the session's running MCP servers, nil when none run (offline).
	MCP func() Servers
	// Admit filters the plugins' MCP servers through the settings' server policy.
	Admit func([]mcphost.ServerConfig) []mcphost.ServerConfig
	// Announce tells the cache watcher the prompt's prefix changes on purpose.
	Announce func(reason string)
	Logger   *slog.Logger
}

// Set is a session's plugins. It is safe for concurrent use, save that Reload runs at one
// request boundary at a time.
type Set struct {
	c Config
	// mu guards set: the Bash tool reads it from its goroutine.
	mu  sync.Mutex
	set *plugin.Set
	// stamp is what the files that decide the set looked like when it was loaded.
	stamp string
}

// New loads the plugins c names. A plugin that fails to load is one of [Set.Errors], never a
// failure of New.
func New(ctx context.Context, c Config) *Set {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Set{c: c}
	p.stamp = p.stampNow()
	p.set = p.read(ctx, c.Settings)
	return p
}

func (p *Set) read(ctx context.Context, st settings.Plugins) *plugin.Set {
	home := p.c.Home
	if p.c.NoInstalled {
		home = ""
	}
	return plugin.LoadSet(ctx, plugin.SetOptions{Home: home, Cwd: p.c.Cwd, Dirs: p.c.Dirs, Settings: st, Env: p.c.Env, Logger: p.c.Logger})
}

// Current is the loaded set now; a nil Set has none.
func (p *Set) Current() *plugin.Set {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.set
}

// List lists the loaded plugins, as init.plugins does.
func (p *Set) List() []plugin.Info { return p.Current().Infos() }

// Errors are the problems of the loaded plugins, as init.plugin_errors lists them.
func (p *Set) Errors() []plugin.Error { return p.Current().Errors() }

// Notices are the problems of the loaded plugins as notices for the user.
func (p *Set) Notices() []event.Notice {
	var out []event.Notice
	for _, e := range p.Errors() {
		out = append(out, Notice(e))
	}
	return out
}

// Notice is a plugin's problem as a notice: an error or a warning.
func Notice(e plugin.Error) event.Notice {
	level := "warn"
	if e.Severity == plugin.SeverityError {
		level = "error"
	}
	return event.Notice{Level: level, Text: "plugin " + e.Plugin + ": " + e.Error()}
}

// stampNow describes the files a change of plugins shows in: the settings files (for
// enabledPlugins) and the install records.
func (p *Set) stampNow() string {
	if len(p.c.Dirs) == 0 && p.c.Home == "" {
		return ""
	}
	files := slices.Clone(p.c.SettingsFiles)
	if p.c.Home != "" {
		files = append(files, plugin.LayoutOf(p.c.Home).Records()...)
	}
	var b strings.Builder
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			fmt.Fprintf(&b, "%s %d %d\n", f, st.Size(), st.ModTime().UnixNano())
		}
	}
	return b.String()
}

// Environ is the Bash tool's environment: the process's, with the enabled plugins' bin/
// folders first on PATH. Nil (inherit) when no plugin has one.
//
// It is the environment of the commands that run outside the sandbox too (excludedCommands,
// an approved dangerouslyDisableSandbox call): a bin/ there is safe first on their PATH
// because no sandboxed command can write one — a plugin lying in a writable root is kept
// read-only whole, or its bin/ is where its root is a working directory itself (the
// session's hookPaths), and a sandboxed command cannot write the others (outside the writable
// roots; installed ones in keel's home, read-only there too).
func (p *Set) Environ() []string {
	bins := p.Current().BinDirs()
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

// OutputStyles are the plugins' output styles as styles the session can answer in (named
// plugin:style).
func (p *Set) OutputStyles() []outputstyle.Style {
	var out []outputstyle.Style
	for _, st := range p.Current().OutputStyles() {
		out = append(out, outputstyle.Style{Name: st.Name, Description: st.Description, Prompt: st.Body,
			KeepCodingInstructions: st.KeepCodingInstructions, Source: st.Path})
	}
	return out
}

// Init is the init event's plugins and plugin_errors.
func (p *Set) Init() ([]event.PluginInfo, []event.PluginError) {
	set := p.Current()
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

// LSPServers are the plugins' language servers as settings values, beside the settings' own.
func (p *Set) LSPServers() map[string]settings.Value[settings.LSPServer] {
	out := map[string]settings.Value[settings.LSPServer]{}
	for _, l := range p.Current().LSPServers() {
		out[l.Name] = l.Server
	}
	return out
}

func names(set *plugin.Set) string {
	var names []string
	for _, i := range set.Infos() {
		names = append(names, i.Source)
	}
	if len(names) == 0 {
		return "none loaded"
	}
	return strings.Join(names, ", ")
}
