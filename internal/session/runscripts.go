package session

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/agentdef"
	"github.com/keel-dev/keel/internal/mcphost"
	"github.com/keel-dev/keel/internal/plugin"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/toolpath"
)

// hookPaths are the files that decide what keel runs outside the sandbox, from the settings,
// the MCP configurations, the agent definitions and the plugins: the scripts their commands
// name ([hookScripts]) — hooks', the status line's, the stdio MCP servers' (settings,
// .mcp.json, --mcp-config, plugins, agents' inline ones) and HTTP servers' headersHelper, the
// language servers' — and each plugin that lies in a writable root ([pluginPaths]). A
// sandboxed command that could change one would run code outside at the next hook, status
// line refresh or server start.
func (s *Session) hookPaths() []string {
	inside := s.hookRoots()
	base := map[string]string{"CLAUDE_PROJECT_DIR": s.projectDir, "KEEL_PROJECT_DIR": s.projectDir}
	// What runs with keel's own environment knows no project variable.
	plain := map[string]string{}
	if home := userHome(); home != "" {
		base["HOME"], plain["HOME"] = home, home
	}
	var out []string
	hooksOf := func(groups []settings.HookGroup) {
		for _, g := range groups {
			for _, h := range g.Hooks {
				if h.Command != "" {
					out = append(out, findScripts(h.Command, hookVars(base, h.Env), s.projectDir, inside).paths...)
				}
			}
		}
	}
	hooksOf(s.settings.Hooks)
	// The terminal UI runs the status line with sh -c in the working directory.
	if c := s.settings.StatusLine.Command.V; c != "" {
		out = append(out, findScripts(c, plain, s.opts.Cwd, inside).paths...)
	}
	servers := s.configuredServers()
	_, env := mcpEnviron(s.opts.MCP)
	for _, d := range s.agentDefs() {
		hooksOf(agentHookGroups(d))
		if len(d.MCPServers) == 0 {
			continue
		}
		if cfg, err := agentServers(d.MCPServers, env); err == nil {
			servers = append(servers, cfg.Servers...)
		}
	}
	for _, sv := range servers {
		if sv.Type == mcphost.TypeStdio || sv.Type == "" {
			out = append(out, argvScripts(append([]string{sv.Command}, sv.Args...), plain, s.opts.Cwd, inside).paths...)
			out = append(out, runnerPaths(sv, s.opts.Cwd, inside)...)
		}
		// An HTTP server's headersHelper runs with sh -c in the working directory.
		if sv.HeadersHelper != "" {
			out = append(out, findScripts(sv.HeadersHelper, plain, s.opts.Cwd, inside).paths...)
		}
	}
	lsp := s.plug.LSPServers()
	maps.Copy(lsp, s.settings.LSPServers)
	for _, l := range lsp {
		out = append(out, argvScripts(append([]string{l.V.Command}, l.V.Args...), plain, s.projectDir, inside).paths...)
	}
	for _, p := range loadedPlugins(s) {
		hooksOf(p.Hooks)
		out = append(out, pluginPaths(p, inside)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// runnerPaths are, for a stdio server a package runner starts in dir (`npx -y PKG`), the
// paths through which a project would most simply provide its package in place of the one
// configured — node_modules/.bin/NAME in dir and each directory above it, where npx looks
// first ([mcphost.PackageRun.Planted]) — where that node_modules lies in a writable root and
// exists (a placeholder would make one in every project): read-only, a placeholder where
// absent. A copy planted otherwise (a package in node_modules, one a command makes a
// node_modules for) keeps the server from starting outside ([mcphost.Policy]).
func runnerPaths(sv mcphost.ServerConfig, dir string, inside []string) []string {
	run, ok := mcphost.PackageRunner(sv.Command, sv.Args)
	if !ok || dir == "" {
		return nil
	}
	var out []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if nm := filepath.Join(d, "node_modules"); withinAny(nm, inside) && isDir(nm) {
			out = append(out, run.Planted(d)...)
		}
		if filepath.Dir(d) == d {
			return out
		}
	}
}

// configuredServers are the MCP servers the session's configuration names, started or not: an
// untrusted project's may start once it is trusted.
func (s *Session) configuredServers() []mcphost.ServerConfig {
	_, env := mcpEnviron(s.opts.MCP)
	cfg := mcphost.Load(mcphost.LoadOptions{Home: s.opts.Home, ProjectDir: s.projectDir, CLIConfigs: s.opts.MCP.Configs,
		Strict: s.opts.MCP.Strict, Env: env, Plugins: s.plug.Current().MCPServers()})
	return cfg.Servers
}

// agentDefs are the agent definitions as they load now, for the commands their hooks and
// inline MCP servers run. Reading a few small files, it is not worth a context of its own.
func (s *Session) agentDefs() []*agentdef.Definition {
	set, err := agentdef.Load(context.Background(), s.agentDefOptions())
	if err != nil || set == nil {
		return nil
	}
	return set.Agents()
}

// agentDefOptions says where the session's agent definitions come from.
func (s *Session) agentDefOptions() agentdef.Options {
	projectDir, home, keelHome := s.projectDir, userHome(), s.opts.Home
	if !s.opts.SDK.sourceAllowed("project") {
		projectDir = ""
	}
	if !s.opts.SDK.sourceAllowed("user") {
		home, keelHome = "", ""
	}
	return agentdef.Options{ProjectDir: projectDir, HomeDir: home, KeelHome: keelHome, CLIAgents: s.opts.Agents,
		Plugins: s.plug.Current().AgentSources(), Logger: s.logger}
}

// agentHookGroups are the command hooks of an agent definition, as written.
func agentHookGroups(d *agentdef.Definition) []settings.HookGroup {
	if len(d.Hooks) == 0 {
		return nil
	}
	var events map[string][]struct {
		Hooks []settings.HookCommand `json:"hooks"`
	}
	if json.Unmarshal(d.Hooks, &events) != nil {
		return nil
	}
	var out []settings.HookGroup
	for _, list := range events {
		for _, g := range list {
			out = append(out, settings.HookGroup{Hooks: g.Hooks})
		}
	}
	return out
}

// pluginParts are what a plugin's root holds that decides what keel runs or allows from it:
// its manifest, hooks, servers, agents (hooks, inline servers), skills and commands
// (allowed-tools) and bin/ (first on the PATH of commands run outside too).
var pluginParts = []string{".claude-plugin", "hooks", ".mcp.json", ".lsp.json", "agents", "skills", "commands", "bin"}

// pluginPaths are what of plugin p stays read-only when it lies in a writable root. The user
// vouched for the plugin as it was, not for what a sandboxed command writes into it later, and
// what it provides runs outside the sandbox or widens what runs there: so its root whole; or,
// where the root is a working directory itself (`--plugin-dir .`), which cannot be read-only
// whole, its [pluginParts] (present or not). Either way with what its manifest names
// elsewhere in the roots. A plugin outside them (installed ones, in keel's home) needs none.
func pluginPaths(p *plugin.Plugin, inside []string) []string {
	root := filepath.Clean(p.Root)
	if !withinAny(root, inside) {
		return nil
	}
	var out []string
	whole := !slices.Contains(inside, root)
	if whole {
		out = append(out, root)
	} else {
		for _, n := range pluginParts {
			out = append(out, filepath.Join(root, n))
		}
	}
	named := slices.Concat(p.Commands, p.Agents, p.Skills, []string{p.BinDir})
	for _, g := range p.Hooks {
		named = append(named, g.From.Path)
	}
	for _, d := range p.MCP {
		named = append(named, d.File)
	}
	for _, f := range named {
		if !filepath.IsAbs(f) || !withinAny(f, inside) || whole && toolpath.Within(f, root) {
			continue
		}
		if _, err := os.Stat(f); err == nil {
			out = append(out, filepath.Clean(f))
		}
	}
	return out
}

// hookRoots are the directories a command in the sandbox may write, where a script keel
// protects may be absent yet and a plugin or a script's directory must be kept read-only: the
// project, the working directories and sandbox.filesystem.allowWrite. Outside them a command
// cannot write, and a path keel made up there would only clutter the lists.
func (s *Session) hookRoots() []string {
	roots := []string{s.projectDir, s.opts.Cwd}
	roots = append(roots, s.state.AdditionalDirs...)
	for _, w := range s.settings.Sandbox.Filesystem.AllowWrite {
		d := w.V
		if d == "~" || strings.HasPrefix(d, "~/") {
			if home := userHome(); home != "" {
				d = filepath.Join(home, d[1:])
			}
		} else if !filepath.IsAbs(d) && s.opts.Cwd != "" {
			d = filepath.Join(s.opts.Cwd, d)
		}
		roots = append(roots, d)
	}
	var out []string
	for _, r := range roots {
		if filepath.IsAbs(r) {
			out = append(out, filepath.Clean(r))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// loadedPlugins are the session's plugins as loaded now; none before they are.
func loadedPlugins(s *Session) []*plugin.Plugin {
	if set := s.plug.Current(); set != nil {
		return set.Plugins
	}
	return nil
}

// hookVars are the variables keel knows a hook's command sees: the project's, and a plugin
// hook's own CLAUDE_PLUGIN_ROOT and CLAUDE_PLUGIN_DATA from its environment.
func hookVars(base map[string]string, env []string) map[string]string {
	if len(env) == 0 {
		return base
	}
	vars := make(map[string]string, len(base)+len(env))
	for k, v := range base {
		vars[k] = v
	}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	return vars
}

// pythonSafe are groups with PYTHONSAFEPATH=1 in the environment of each hook whose Python
// script lies directly in a writable root: that directory cannot be read-only whole, and
// Python puts a script's directory first on sys.path, so a json.py a sandboxed command put
// beside the script would run outside at the next hook; with it, Python (3.11 and later)
// leaves the directory off. A hook whose script imports a module beside it there fails then,
// which is the safer failure.
func (s *Session) pythonSafe(groups []settings.HookGroup) []settings.HookGroup {
	inside := s.hookRoots()
	base := map[string]string{"CLAUDE_PROJECT_DIR": s.projectDir, "KEEL_PROJECT_DIR": s.projectDir}
	if home := userHome(); home != "" {
		base["HOME"] = home
	}
	var out []settings.HookGroup
	for gi, g := range groups {
		for hi, h := range g.Hooks {
			if h.Command == "" || !findScripts(h.Command, hookVars(base, h.Env), s.projectDir, inside).exposed {
				continue
			}
			if out == nil {
				out = slices.Clone(groups)
			}
			if &out[gi].Hooks[0] == &groups[gi].Hooks[0] {
				out[gi].Hooks = slices.Clone(g.Hooks)
			}
			out[gi].Hooks[hi].Env = append(slices.Clip(h.Env), "PYTHONSAFEPATH=1")
		}
	}
	if out == nil {
		return groups
	}
	return out
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
