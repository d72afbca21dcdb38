package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/lazy"
	"github.com/keel-dev/keel/internal/mcphost"
	"github.com/keel-dev/keel/internal/settings"
)

// Spec says what [Load] reads.
type Spec struct {
	// Root is the plugin's folder.
	Root string
	// Name is the plugin's name when its manifest gives none (or there is no manifest): the
	// marketplace entry's name, else the folder's.
	Name string
	// Marketplace names the marketplace an installed plugin came from; "" for a folder.
	Marketplace string
	// Entry is the marketplace entry the plugin was installed from: its component keys add to
	// the manifest's, and a strict: false entry stands in for a manifest.
	Entry  *Entry
	Origin Origin
	// DataRoot holds the plugins' data folders ($KEEL_HOME/plugins/data); "" leaves
	// ${CLAUDE_PLUGIN_DATA} empty.
	DataRoot string
	// Env is the environment ${VAR} in MCP server entries expands from.
	Env map[string]string
}

// loader is the state of one Load.
type loader struct {
	p    *Plugin
	pr   *problems
	docs []*doc // the manifest, then the marketplace entry
	spec Spec
}

// Load reads the plugin at spec.Root. It always returns a plugin: what could not be read is in
// its Errors, and everything else is there.
func Load(spec Spec) *Plugin {
	root, err := filepath.Abs(spec.Root)
	if err == nil {
		root = filepath.Clean(root)
	}
	p := &Plugin{Root: root, Origin: spec.Origin}
	l := &loader{p: p, pr: &problems{}, spec: spec}
	name := spec.Name
	if name == "" {
		name = filepath.Base(root)
	}
	l.pr.plugin = name + "@" + cmpOr(spec.Marketplace, "inline")
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		l.pr.errorf(ErrPathNotFound, root, 0, "", "plugin folder %s does not exist or is not a folder", root)
		p.Name, p.ID, p.Errors = name, l.pr.plugin, l.pr.list
		return p
	}
	var man Manifest
	if d := l.readManifest(); d != nil {
		man = parseManifest(l.pr, d, false)
		l.docs = append(l.docs, d)
	}
	if spec.Entry != nil {
		if d := spec.Entry.doc(l.pr); d != nil {
			em := parseManifest(l.pr, d, true)
			if !p.HasManifest {
				man = em
			}
			if !spec.Entry.Strict && p.HasManifest && declaresComponents(l.docs[0]) && declaresComponents(d) {
				l.pr.warnf(ErrManifest, d.file, d.line(), "strict", "entry %s is strict: false and both it and plugin.json declare components; keel loads both", spec.Entry.Name)
			}
			l.docs = append(l.docs, d)
		}
	}
	p.Name = name
	if man.Name != "" && validName(man.Name) == "" {
		p.Name = man.Name
	}
	p.Version, p.Description = man.Version, man.Description
	if spec.Entry != nil {
		p.Version = cmpOr(p.Version, spec.Entry.Version)
		p.Description = cmpOr(p.Description, spec.Entry.Description)
	}
	p.ID = p.Name + "@" + cmpOr(spec.Marketplace, "inline")
	l.pr.plugin = p.ID
	if spec.DataRoot != "" {
		p.DataDir = filepath.Join(spec.DataRoot, dataID(p.ID))
	}
	l.components()
	p.Errors = l.pr.list
	return p
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// dataID is a plugin id as a folder name: characters outside [A-Za-z0-9_-] become "-"
// (formatter@acme-tools is formatter-acme-tools), as Claude Code names data folders.
func dataID(id string) string { return notIDChar.Get().ReplaceAllString(id, "-") }

var notIDChar = lazy.Regexp{Expr: `[^A-Za-z0-9_-]`}

// readManifest reads .claude-plugin/plugin.json; a plugin without one is normal.
func (l *loader) readManifest() *doc {
	file := filepath.Join(l.p.Root, ManifestPath)
	data, err := os.ReadFile(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		l.pr.errorf(ErrManifest, file, 0, "", "read the manifest: %v", err)
		return nil
	}
	l.p.HasManifest = true
	ix := indexLines(data)
	return readDoc(l.pr, file, data, ix, "", data)
}

func declaresComponents(d *doc) bool {
	for _, k := range componentKeys {
		if hasKey(d.members, k) {
			return true
		}
	}
	return false
}

// components finds every component of the plugin.
func (l *loader) components() {
	p := l.p
	p.Commands = l.paths(keyCommands, defaultCommands, nil)
	p.Agents = l.paths(keyAgents, defaultAgents, func(x declared) {
		if isDir(x.path) {
			l.pr.warnf(ErrManifest, x.d.file, x.line(), keyAgents, "%s names a folder; Claude Code takes only .md files here, keel reads the folder's agents", pathKey(x.ptr))
		}
	})
	p.Skills = l.paths(keySkills, defaultSkills, nil)
	for _, path := range l.paths(keyOutputStyles, defaultOutputStyles, nil) {
		p.OutputStyles = append(p.OutputStyles, loadOutputStyles(l.pr, p.Name, path)...)
	}
	for _, x := range l.files(keyHooks, defaultHooks) {
		l.hooks(x)
	}
	for _, x := range l.files(keyMCPServers, defaultMCP) {
		l.mcp(x)
	}
	for _, x := range l.files(keyLSPServers, defaultLSP) {
		l.lsp(x)
	}
	if bin := filepath.Join(p.Root, defaultBin); isDir(bin) {
		p.BinDir = bin
	}
}

// source is the file and data a declared configuration is read from: the file itself, the
// whole manifest with the key in place (so lines stay true), or a document made of the inline
// object under key.
func (l *loader) source(x declared, key string) (file string, data []byte, member string, err error) {
	switch {
	case x.path != "":
		data, err = os.ReadFile(x.path)
		return x.path, data, key, err
	case x.d.ptr == "" && len(x.ptr) == 1:
		return x.d.file, x.d.data, key, nil
	}
	data, err = json.Marshal(map[string]json.RawMessage{key: x.inline})
	return fmt.Sprintf("%s (%s)", x.d.file, strings.TrimPrefix(x.d.ptr+pointer(x.ptr...), "/")), data, key, err
}

func (l *loader) hooks(x declared) {
	file, data, key, err := l.source(x, keyHooks)
	if err != nil {
		l.pr.errorf(ErrHookLoad, file, 0, "", "read hooks: %v", err)
		return
	}
	if x.path != "" {
		if !l.hooksFileShape(file, data) {
			return
		}
	}
	groups, probs := settings.PluginHooks(file, data, key)
	for _, pb := range probs {
		l.pr.add(severity(pb.Severity), ErrHookLoad, pb.Path, pb.Line, "hooks", "%s", pb.Msg)
	}
	vars := l.p.Vars()
	for _, g := range groups {
		for i := range g.Hooks {
			h := &g.Hooks[i]
			h.Command = expandVars(h.Command, vars)
			h.Env = envList(vars)
		}
		l.p.Hooks = append(l.p.Hooks, g)
	}
}

// hooksFileShape checks the top level of a hooks file: {"description": …, "hooks": {…}}.
func (l *loader) hooksFileShape(file string, data []byte) bool {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		line, msg := syntaxLine(data, err)
		l.pr.errorf(ErrHookLoad, file, line, "", "invalid JSON: %s", msg)
		return false
	}
	ix := indexLines(data)
	if !hasKey(top, "hooks") {
		l.pr.errorf(ErrHookLoad, file, 0, "hooks", `has no "hooks" key: want {"hooks": {"PreToolUse": [{"matcher": "…", "hooks": [{"type": "command", "command": "…"}]}]}}`)
		return false
	}
	for _, k := range sortedByLine(top, ix) {
		if k != "hooks" && k != "description" && k != "$schema" {
			l.pr.warnf(ErrHookLoad, file, ix.line(pointer(k)), k, "unknown key %s (ignored; the keys are description, hooks)", k)
		}
	}
	return true
}

func sortedByLine(m map[string]json.RawMessage, ix lineIndex) []string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int { return ix.line(pointer(a)) - ix.line(pointer(b)) })
	return keys
}

func (l *loader) mcp(x declared) {
	file, data, _, err := l.source(x, keyMCPServers)
	if err != nil {
		l.pr.errorf(ErrMCPConfig, file, 0, "", "read MCP servers: %v", err)
		return
	}
	if x.path == "" && file == x.d.file {
		// The manifest itself: only its mcpServers key is about servers.
		data, _ = json.Marshal(map[string]json.RawMessage{keyMCPServers: x.d.members[keyMCPServers]})
	}
	l.p.MCP = append(l.p.MCP, MCPDoc{File: file, Data: data})
}

func (l *loader) lsp(x declared) {
	file, data, key, err := l.source(x, keyLSPServers)
	if err != nil {
		l.pr.errorf(ErrLSPConfig, file, 0, "", "read language servers: %v", err)
		return
	}
	if x.path != "" {
		key = ""
	}
	servers, probs := settings.PluginLSPServers(file, data, key)
	for _, pb := range probs {
		l.pr.add(severity(pb.Severity), ErrLSPConfig, pb.Path, pb.Line, "lspServers", "%s", pb.Msg)
	}
	vars := l.p.Vars()
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		v := servers[name]
		srv := v.V
		srv.Command = expandVars(srv.Command, vars)
		srv.Args = slices.Clone(srv.Args)
		for i := range srv.Args {
			srv.Args[i] = expandVars(srv.Args[i], vars)
		}
		srv.Env = maps.Clone(srv.Env)
		for k := range srv.Env {
			srv.Env[k] = expandVars(srv.Env[k], vars)
		}
		if srv.Env == nil {
			srv.Env = map[string]string{}
		}
		maps.Copy(srv.Env, vars)
		srv.WorkspaceFolder = expandVars(srv.WorkspaceFolder, vars)
		v.V = srv
		l.p.LSP = append(l.p.LSP, LSPServer{Name: "plugin:" + l.p.Name + ":" + name, Server: v})
	}
}

func severity(s settings.Severity) Severity {
	if s == settings.SeverityError {
		return SeverityError
	}
	return SeverityWarning
}

// MCPServers parses the plugin's MCP documents into server entries named
// plugin_<plugin>_<server>; env is the environment ${VAR} expands from (the plugin's own
// variables are added). Problems are returned as the plugin's errors.
func (p *Plugin) MCPServers(env map[string]string) ([]mcphost.ServerConfig, []Error) {
	vars := maps.Clone(env)
	if vars == nil {
		vars = map[string]string{}
	}
	maps.Copy(vars, p.Vars())
	var out []mcphost.ServerConfig
	var errs []Error
	for _, d := range p.MCP {
		servers, probs := mcphost.ParsePlugin(p.Name, d.File, d.Data, vars)
		for i := range servers {
			if servers[i].Type == mcphost.TypeStdio {
				servers[i].Env = maps.Clone(servers[i].Env)
				if servers[i].Env == nil {
					servers[i].Env = map[string]string{}
				}
				maps.Copy(servers[i].Env, p.Vars())
			}
		}
		out = append(out, servers...)
		for _, pb := range probs {
			sev := SeverityError
			if pb.Warning {
				sev = SeverityWarning
			}
			errs = append(errs, Error{Plugin: p.ID, Type: ErrMCPConfig, Severity: sev, File: pb.File, Key: pb.Path,
				Message: strings.TrimPrefix(pb.Error(), pb.File+": ")})
		}
	}
	return out, errs
}
