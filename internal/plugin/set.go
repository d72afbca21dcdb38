package plugin

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/agentdef"
	"github.com/keel-dev/keel/internal/mcphost"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/skill"
)

// DirSpec is one plugin given by path: a --plugin-dir value or an Agent SDK plugins entry.
type DirSpec struct {
	// Path is a plugin folder or a .zip of one; relative paths are taken from Cwd.
	Path string
	// Kind is OriginDir or OriginSDK.
	Kind string
	// NoMCP loads the plugin without its MCP servers (--plugin-dir-no-mcp, the SDK's
	// skipMcpDiscovery): the driving program owns those connections.
	NoMCP bool
}

// SetOptions say which plugins a session loads.
type SetOptions struct {
	// Home is $KEEL_HOME: install records, marketplaces, data folders. Empty loads only Dirs.
	Home string
	// Cwd resolves relative Dirs.
	Cwd string
	// Dirs are the plugins given by path, in order; they win over an installed plugin of the
	// same name.
	Dirs []DirSpec
	// Settings are the merged plugin settings: enabledPlugins (an installed plugin without an
	// entry is enabled) and the managed marketplace lists.
	Settings settings.Plugins
	// Env is the environment ${VAR} in MCP server entries expands from.
	Env    map[string]string
	Logger *slog.Logger
}

// Set is the plugins a session runs with. It is not modified after [LoadSet] returns.
type Set struct {
	Plugins []*Plugin
	// noMCP are the ids of plugins loaded without their MCP servers.
	noMCP  map[string]bool
	mcp    []mcphost.ServerConfig
	errors []Error
}

// LoadSet loads the plugins given by path and the enabled installed ones. A plugin that fails
// to load entirely is an error in the set; one that loads in part keeps its errors.
func LoadSet(ctx context.Context, opts SetOptions) *Set {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Set{noMCP: map[string]bool{}}
	lay := LayoutOf(opts.Home)
	dataRoot := ""
	if opts.Home != "" {
		dataRoot = lay.Data()
	}
	for i, d := range opts.Dirs {
		if ctx.Err() != nil {
			return s
		}
		s.loadDir(i, d, opts, lay, dataRoot)
	}
	if opts.Home != "" {
		s.loadInstalled(ctx, opts, lay, dataRoot)
	}
	for _, p := range s.Plugins {
		if p.DataDir != "" && runsCode(p) {
			if err := os.MkdirAll(p.DataDir, 0o700); err != nil {
				s.errors = append(s.errors, Error{Plugin: p.ID, Type: ErrGeneric, Severity: SeverityError,
					Message: fmt.Sprintf("create the data folder %s: %v", p.DataDir, err)})
			}
		}
		if s.noMCP[p.ID] {
			continue
		}
		servers, errs := p.MCPServers(opts.Env)
		s.mcp = append(s.mcp, servers...)
		s.errors = append(s.errors, errs...)
	}
	logger.Debug("plugins loaded", "plugins", len(s.Plugins), "problems", len(s.Errors()))
	return s
}

func runsCode(p *Plugin) bool {
	return len(p.Hooks) > 0 || len(p.MCP) > 0 || len(p.LSP) > 0 || p.BinDir != ""
}

func (s *Set) loadDir(i int, d DirSpec, opts SetOptions, lay Layout, dataRoot string) {
	path := d.Path
	if !filepath.IsAbs(path) && opts.Cwd != "" {
		path = filepath.Join(opts.Cwd, path)
	}
	kind := cmpOr(d.Kind, OriginDir)
	fail := func(typ, format string, args ...any) {
		s.errors = append(s.errors, Error{Plugin: fmt.Sprintf("inline[%d]", i), Type: typ, Severity: SeverityError,
			Path: path, Message: fmt.Sprintf(format, args...)})
	}
	root := path
	if strings.EqualFold(filepath.Ext(path), ".zip") && isFile(path) {
		zips := lay.Zips()
		if opts.Home == "" {
			zips = filepath.Join(os.TempDir(), "keel-plugin-zips")
		}
		r, err := unzipPlugin(path, zips)
		if err != nil {
			fail(ErrGeneric, "%v", err)
			return
		}
		root = r
	}
	if !isDir(root) {
		fail(ErrPathNotFound, "plugin folder %s does not exist or is not a folder (nor a .zip)", path)
		return
	}
	p := Load(Spec{Root: root, Origin: Origin{Kind: kind, Path: d.Path}, DataRoot: dataRoot, Env: opts.Env})
	if s.byName(p.Name) != nil {
		fail(ErrGeneric, "a plugin named %s is already loaded; %s is skipped", p.Name, path)
		return
	}
	if d.NoMCP {
		s.noMCP[p.ID] = true
	}
	s.Plugins = append(s.Plugins, p)
}

func (s *Set) loadInstalled(ctx context.Context, opts SetOptions, lay Layout, dataRoot string) {
	installed, err := lay.Installed()
	if err != nil {
		s.errors = append(s.errors, Error{Plugin: "installed", Type: ErrGeneric, Severity: SeverityError, Message: err.Error()})
	}
	known, err := lay.Marketplaces()
	if err != nil {
		s.errors = append(s.errors, Error{Plugin: "marketplaces", Type: ErrGeneric, Severity: SeverityError, Message: err.Error()})
	}
	catalogs := map[string]*Marketplace{}
	for _, id := range sortedKeys(installed) {
		if ctx.Err() != nil {
			return
		}
		rec := installed[id]
		if v, ok := opts.Settings.Enabled[id]; ok && !v.V {
			continue
		}
		km, hasKM := known[rec.Marketplace]
		if hasKM {
			if err := Allowed(rec.Marketplace, km.Source, opts.Settings); err != nil {
				s.errors = append(s.errors, Error{Plugin: id, Type: ErrMarketplacePolicy, Severity: SeverityError, Message: err.Error()})
				continue
			}
		}
		if other := s.byName(rec.Plugin); other != nil {
			s.errors = append(s.errors, Error{Plugin: id, Type: ErrGeneric, Severity: SeverityWarning,
				Message: fmt.Sprintf("%s is not loaded: %s (%s) has the same name and wins", id, other.ID, other.Origin.Path)})
			continue
		}
		spec := Spec{Root: rec.InstallPath, Name: rec.Plugin, Marketplace: rec.Marketplace,
			Origin: Origin{Kind: OriginInstalled, Marketplace: rec.Marketplace}, DataRoot: dataRoot, Env: opts.Env}
		if hasKM {
			cat, ok := catalogs[rec.Marketplace]
			if !ok {
				cat, _ = ReadMarketplace(km.InstallLocation)
				catalogs[rec.Marketplace] = cat
			}
			if cat != nil {
				spec.Entry, _ = cat.Entry(rec.Plugin)
			}
		}
		s.Plugins = append(s.Plugins, Load(spec))
	}
	for _, id := range sortedKeys(opts.Settings.Enabled) {
		v := opts.Settings.Enabled[id]
		if _, ok := installed[id]; v.V && !ok && pluginIDPattern(id) {
			s.errors = append(s.errors, Error{Plugin: id, Type: ErrNotInstalled, Severity: SeverityError, File: v.From.Path, Line: v.From.Line,
				Message: fmt.Sprintf("%s is enabled but not installed; install it with: keel plugin install %s", id, id)})
		}
	}
}

func pluginIDPattern(id string) bool {
	name, market, ok := strings.Cut(id, "@")
	return ok && name != "" && market != "" && !strings.Contains(market, "@")
}

func (s *Set) byName(name string) *Plugin {
	i := slices.IndexFunc(s.Plugins, func(p *Plugin) bool { return p.Name == name })
	if i < 0 {
		return nil
	}
	return s.Plugins[i]
}

// Errors returns every problem: of the set (plugins that did not load, enabled plugins that
// are not installed) and of each plugin, in load order. This is plugin_errors.
func (s *Set) Errors() []Error {
	if s == nil {
		return nil
	}
	out := slices.Clone(s.errors)
	for _, p := range s.Plugins {
		out = append(out, p.Errors...)
	}
	return out
}

// AgentSources are the plugins' agent files and folders for agentdef.
func (s *Set) AgentSources() []agentdef.Plugin {
	var out []agentdef.Plugin
	for _, p := range s.plugins() {
		for _, path := range p.Agents {
			out = append(out, agentdef.Plugin{Name: p.Name, Dir: path})
		}
	}
	return out
}

// SkillSources are the plugins' commands and skills for the skill catalog.
func (s *Set) SkillSources() []skill.Plugin {
	var out []skill.Plugin
	for _, p := range s.plugins() {
		if len(p.Commands)+len(p.Skills) > 0 {
			out = append(out, skill.Plugin{Name: p.Name, Root: p.Root, DataDir: p.DataDir, Commands: p.Commands, Skills: p.Skills})
		}
	}
	return out
}

// Hooks are the plugins' hook groups, to run beside the settings' own.
func (s *Set) Hooks() []settings.HookGroup {
	var out []settings.HookGroup
	for _, p := range s.plugins() {
		out = append(out, p.Hooks...)
	}
	return out
}

// MCPServers are the plugins' MCP servers for mcphost's plugin source.
func (s *Set) MCPServers() []mcphost.ServerConfig {
	if s == nil {
		return nil
	}
	return slices.Clone(s.mcp)
}

// LSPServers are the plugins' language servers.
func (s *Set) LSPServers() []LSPServer {
	var out []LSPServer
	for _, p := range s.plugins() {
		out = append(out, p.LSP...)
	}
	return out
}

// BinDirs are the plugins' bin/ folders, which join the Bash tool's PATH.
func (s *Set) BinDirs() []string {
	var out []string
	for _, p := range s.plugins() {
		if p.BinDir != "" {
			out = append(out, p.BinDir)
		}
	}
	return out
}

// OutputStyles are the plugins' output styles.
func (s *Set) OutputStyles() []OutputStyle {
	var out []OutputStyle
	for _, p := range s.plugins() {
		out = append(out, p.OutputStyles...)
	}
	return out
}

// Info is one loaded plugin as the Agent SDK's init message lists it.
type Info struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Version string `json:"version,omitempty"`
	// Source is name@marketplace (name@inline for a folder).
	Source string `json:"source"`
}

// Infos lists the loaded plugins for init.plugins.
func (s *Set) Infos() []Info {
	out := []Info{}
	for _, p := range s.plugins() {
		out = append(out, Info{Name: p.Name, Path: p.Root, Version: p.Version, Source: p.ID})
	}
	return out
}

// Key identifies what the set loaded: two sets with the same key give a session the same
// tools, skills, agents and hooks, so a reload that keeps it changes nothing.
func (s *Set) Key() string {
	var b strings.Builder
	for _, p := range s.plugins() {
		fmt.Fprintf(&b, "%s|%s|%s|%t\n", p.ID, p.Root, p.Version, s.noMCP[p.ID])
	}
	return b.String()
}

func (s *Set) plugins() []*Plugin {
	if s == nil {
		return nil
	}
	return s.Plugins
}
