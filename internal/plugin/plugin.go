// Package plugin loads Claude Code plugins — folders with a .claude-plugin/plugin.json
// manifest (optional) and the components keel already knows: commands, agents, skills, hooks,
// MCP and LSP servers, output styles and a bin/ folder — and keeps the marketplaces they are
// installed from.
//
// [Load] reads one plugin folder as Claude Code does: the default layout, the manifest's path
// keys, a marketplace entry's own component keys, ${CLAUDE_PLUGIN_ROOT} and
// ${CLAUDE_PLUGIN_DATA} expanded in what runs. It never refuses a plugin for a problem: each
// one becomes an [Error] (the Agent SDK's plugin_errors entry, with file and line) and the
// rest still loads. The loaders of the components take a plugin's parts from a [Set]: agentdef
// ([Set.AgentSources]), skill ([Set.SkillSources]), hooks ([Set.Hooks]), mcphost
// ([Set.MCPSources]), the language servers ([Set.LSPServers]) and the Bash tool ([Set.BinDirs]).
//
// Marketplaces and installs live under $KEEL_HOME/plugins: known_marketplaces.json,
// installed_plugins.json, marketplaces/<name>/ (clones), cache/<marketplace>/<plugin>/<version>/
// (installed copies) and data/<id>/ (each plugin's persistent data folder). [Manager] changes
// them; [Validate] checks a plugin or marketplace as `claude plugin validate` does.
package plugin

import (
	"fmt"
	"strings"

	"github.com/keel-dev/keel/internal/settings"
)

// Origin kinds: how a plugin came into a session.
const (
	// OriginDir is a --plugin-dir folder or zip.
	OriginDir = "dir"
	// OriginSDK is the Agent SDK's plugins option ({type: "local", path}).
	OriginSDK = "sdk"
	// OriginInstalled is a plugin installed from a marketplace.
	OriginInstalled = "installed"
)

// Origin says where a loaded plugin came from, for `/help`, `/agents`, `keel plugin list` and
// init.plugins.
type Origin struct {
	Kind string `json:"kind"`
	// Marketplace names the marketplace of an installed plugin.
	Marketplace string `json:"marketplace,omitempty"`
	// Path is the --plugin-dir or SDK path as given (a folder or a zip).
	Path string `json:"path,omitempty"`
}

// Plugin is one loaded plugin. It is not modified after [Load] returns.
type Plugin struct {
	// Name is the plugin's namespace: its commands are /Name:command, its agents Name:agent.
	Name string
	// ID is name@marketplace, or name@inline for a plugin loaded from a folder.
	ID          string
	Version     string
	Description string
	Origin      Origin
	// Root is the plugin's folder, the value of ${CLAUDE_PLUGIN_ROOT}; DataDir its persistent
	// data folder, ${CLAUDE_PLUGIN_DATA} (created when something runs).
	Root    string
	DataDir string
	// HasManifest says .claude-plugin/plugin.json exists.
	HasManifest bool

	// Commands are command files and folders; Agents agent files and folders; Skills folders
	// that hold a SKILL.md or skill folders. Paths are absolute, without repeats.
	Commands []string
	Agents   []string
	Skills   []string
	// OutputStyles are the plugin's output styles.
	OutputStyles []OutputStyle
	// Hooks are the plugin's hook groups with the plugin variables expanded in their commands.
	Hooks []settings.HookGroup
	// MCP are the documents that declare MCP servers: .mcp.json files and the manifest's or a
	// marketplace entry's inline mcpServers.
	MCP []MCPDoc
	// LSP are the language servers, named plugin:<Name>:<server>, variables expanded.
	LSP []LSPServer
	// BinDir is the plugin's bin/ folder when it has one: it joins the Bash tool's PATH.
	BinDir string

	// Errors are the problems found loading it, in the order found.
	Errors []Error
}

// MCPDoc is one JSON document that declares MCP servers: a .mcp.json file (wrapped in
// "mcpServers" or a bare map of servers), or a manifest or marketplace entry whose
// "mcpServers" key holds them.
type MCPDoc struct {
	File string
	Data []byte
}

// LSPServer is one language server a plugin declares.
type LSPServer struct {
	// Name is plugin:<plugin>:<server>.
	Name   string
	Server settings.Value[settings.LSPServer]
}

// Vars are the variables a plugin's hooks and servers see, both as ${NAME} written in their
// configuration and in their environment.
func (p *Plugin) Vars() map[string]string {
	return map[string]string{"CLAUDE_PLUGIN_ROOT": p.Root, "CLAUDE_PLUGIN_DATA": p.DataDir}
}

// Severity says whether a problem lost something.
type Severity string

// Severities.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Error types, from the Agent SDK's open set of plugin_errors types where one fits.
const (
	ErrPathNotFound      = "path-not-found"
	ErrManifest          = "manifest-validation-error"
	ErrHookLoad          = "hook-load-failed"
	ErrMCPConfig         = "mcp-config-invalid"
	ErrLSPConfig         = "lsp-config-invalid"
	ErrComponent         = "component-load-failed"
	ErrUnsupported       = "unsupported"
	ErrNotInstalled      = "plugin-not-installed"
	ErrMarketplace       = "marketplace-error"
	ErrMarketplacePolicy = "marketplace-blocked"
	ErrGeneric           = "generic-error"
)

// Error is one problem with a plugin, shaped as an entry of the Agent SDK's plugin_errors
// (plugin, type, message, path) and carrying the file, line and key it is about.
type Error struct {
	// Plugin is name@marketplace, or inline[N] for a --plugin-dir or SDK entry that failed
	// before it had a name.
	Plugin   string   `json:"plugin"`
	Type     string   `json:"type"`
	Message  string   `json:"message"`
	Severity Severity `json:"-"`
	// Path is the --plugin-dir or SDK path of an entry that did not load at all.
	Path string `json:"path,omitempty"`
	// File, Line and Key locate the problem: the file, its line (0 for the whole file) and the
	// JSON key or frontmatter field.
	File string `json:"-"`
	Line int    `json:"-"`
	Key  string `json:"-"`
}

// Error renders "file:line: message", the form editors jump to.
func (e Error) Error() string {
	switch {
	case e.File == "":
		return e.Message
	case e.Line == 0:
		return fmt.Sprintf("%s: %s", e.File, e.Message)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Message)
}

// SDKMessage is the message an SDK client shows: where, and what.
func (e Error) SDKMessage() string {
	msg := e.Error()
	if e.Severity == SeverityWarning {
		msg = "warning: " + msg
	}
	return msg
}

// problems collects the Errors of one plugin being loaded.
type problems struct {
	plugin string
	list   []Error
}

func (p *problems) add(sev Severity, typ, file string, line int, key, format string, args ...any) {
	p.list = append(p.list, Error{Plugin: p.plugin, Type: typ, Severity: sev, File: file, Line: line, Key: key,
		Message: fmt.Sprintf(format, args...)})
}

func (p *problems) errorf(typ, file string, line int, key, format string, args ...any) {
	p.add(SeverityError, typ, file, line, key, format, args...)
}

func (p *problems) warnf(typ, file string, line int, key, format string, args ...any) {
	p.add(SeverityWarning, typ, file, line, key, format, args...)
}

// validName reports why a plugin or marketplace name cannot be used as a namespace, or "".
func validName(name string) string {
	switch {
	case name == "":
		return "is empty"
	case strings.ContainsAny(name, " \t\r\n"):
		return `contains spaces; use kebab-case (e.g. "my-plugin")`
	case strings.ContainsAny(name, `/\:@`) || name == "." || name == "..":
		return `contains "/", "\", ":" or "@", or is "." or ".."`
	}
	return ""
}
