// Package mcphost connects keel to MCP servers: it loads their configuration from every
// source (user, project .mcp.json, local, --mcp-config, managed, enabled plugins), gates what a project provides
// behind workspace trust and the managed allow/deny lists, connects over stdio, streamable
// HTTP or SSE (with OAuth where a server asks for it), and turns each server's tools into
// [tool.Tool] values named mcp__<server>__<tool>.
//
// Everything the model sees from MCP belongs to a generation: a list_changed notification, a
// reconnect or a disconnect starts a new one, and the [Manager] hands the next request the new
// tool set, waiting (bounded) for a relist in flight. A crashed server's tools vanish from the
// next request and calling one returns a clear error. When the schemas would take too much of
// the context window, tools are deferred behind the ToolSearch tool.
package mcphost

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/settings"
)

// Transport types a server entry may name.
const (
	TypeStdio = "stdio"
	TypeHTTP  = "http"
	TypeSSE   = "sse"
)

// Types lists the valid transport types, for error messages.
var Types = []string{TypeStdio, TypeHTTP, TypeSSE}

// Scope says which source a server entry came from.
type Scope string

// The configuration sources, highest precedence first.
const (
	ScopeManaged Scope = "managed"
	ScopeCLI     Scope = "cli"
	ScopeLocal   Scope = "local"
	ScopeProject Scope = "project"
	ScopeUser    Scope = "user"
	// ScopeDynamic marks servers added while the session runs (the Agent SDK's
	// mcp_set_servers); no file holds them.
	ScopeDynamic Scope = "dynamic"
)

// scopeOrder is the precedence: for a name given by several sources, the first wins. Plugin
// servers are named plugin_<plugin>_<server>, so they only ever meet each other.
var scopeOrder = []Scope{ScopeManaged, ScopeCLI, ScopeLocal, ScopeProject, ScopeUser, ScopePlugin}

// File names under $KEEL_HOME and in a project.
const (
	UserFile    = "mcp.json"       // $KEEL_HOME/mcp.json: {"mcpServers":{…}}
	LocalFile   = "mcp-local.json" // $KEEL_HOME/mcp-local.json: {"projects":{dir:{"mcpServers":{…}}}}
	ProjectFile = ".mcp.json"      // <project>/.mcp.json, Claude Code's format
)

// ServerConfig is one server entry, in Claude Code's .mcp.json format. Keys keel does not know
// (description, setup, …) are ignored: real files carry them.
type ServerConfig struct {
	Name          string            `json:"-"`
	Type          string            `json:"type,omitempty"`
	Command       string            `json:"command,omitempty"`
	Args          []string          `json:"args,omitempty"`
	Env           map[string]string `json:"env,omitempty"`
	URL           string            `json:"url,omitempty"`
	Headers       map[string]string `json:"headers,omitempty"`
	HeadersHelper string            `json:"headersHelper,omitempty"`
	OAuth         *OAuthConfig      `json:"oauth,omitempty"`

	// Scope and File say where the entry came from.
	Scope Scope  `json:"-"`
	File  string `json:"-"`
	// Disabled, when not empty, says why the server must not start (trust, policy, settings).
	Disabled string `json:"-"`
}

// Project reports whether the entry was provided by the project (and so needs trust).
func (c ServerConfig) Project() bool { return c.Scope == ScopeProject }

// Problem is something wrong in a configuration source. The rest of the source, and every
// other source, still loads.
type Problem struct {
	File   string // file name, or "--mcp-config[2]" for inline JSON
	Path   string // JSON path, e.g. mcpServers.github.args
	Server string
	Msg    string
	// Warning problems do not stop the server from loading.
	Warning bool
}

func (p Problem) Error() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Path != "" {
		b.WriteString(": " + p.Path)
	}
	b.WriteString(": " + p.Msg)
	return b.String()
}

// LoadOptions says where to look. The environment used for ${VAR} expansion is passed in.
type LoadOptions struct {
	Home       string   // $KEEL_HOME; empty skips the user and local sources
	ProjectDir string   // the project root; empty skips .mcp.json and local entries
	CLIConfigs []string // --mcp-config values: a file name or JSON text, in order
	Strict     bool     // --strict-mcp-config: only CLIConfigs (and managed) count
	Managed    string   // managed MCP file; empty means none
	Env        map[string]string
	// Plugins are the enabled plugins' servers ([ParsePlugin]); Strict does not drop them
	// (a plugin that should bring none is loaded without its MCP discovery instead).
	Plugins []ServerConfig
}

// Config is the merged server list.
type Config struct {
	// Servers holds one entry per name, the highest-precedence source winning, sorted by name.
	Servers []ServerConfig
	// Problems lists everything wrong in any source.
	Problems []Problem
}

// Server returns the entry called name.
func (c *Config) Server(name string) (ServerConfig, bool) {
	i := slices.IndexFunc(c.Servers, func(s ServerConfig) bool { return s.Name == name })
	if i < 0 {
		return ServerConfig{}, false
	}
	return c.Servers[i], true
}

// Load reads every source. A missing file is normal; so is no configuration at all. Nothing is
// started here, so loading an untrusted project's .mcp.json is safe.
func Load(opts LoadOptions) *Config {
	c := &Config{}
	byScope := map[Scope][]ServerConfig{}
	add := func(scope Scope, file string, data []byte, prefix []string) {
		byScope[scope] = append(byScope[scope], c.parse(scope, file, data, prefix, opts.Env)...)
	}
	readFile := func(scope Scope, path string, prefix ...string) {
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			return
		}
		if settings.StandIn(path) {
			return
		}
		if err != nil {
			c.Problems = append(c.Problems, Problem{File: path, Msg: err.Error()})
			return
		}
		add(scope, path, data, prefix)
	}
	if opts.Managed != "" {
		readFile(ScopeManaged, opts.Managed)
	}
	for i, v := range opts.CLIConfigs {
		if t := strings.TrimSpace(v); strings.HasPrefix(t, "{") {
			add(ScopeCLI, fmt.Sprintf("--mcp-config[%d]", i), []byte(t), nil)
			continue
		}
		if _, err := os.Stat(v); err != nil {
			c.Problems = append(c.Problems, Problem{File: v, Msg: fmt.Sprintf("--mcp-config: %v", err)})
			continue
		}
		readFile(ScopeCLI, v)
	}
	if !opts.Strict {
		if opts.Home != "" && opts.ProjectDir != "" {
			readFile(ScopeLocal, filepath.Join(opts.Home, LocalFile), "projects", projectKey(opts.ProjectDir))
		}
		if opts.ProjectDir != "" {
			readFile(ScopeProject, filepath.Join(opts.ProjectDir, ProjectFile))
		}
		if opts.Home != "" {
			readFile(ScopeUser, filepath.Join(opts.Home, UserFile))
		}
	}
	byScope[ScopePlugin] = append(byScope[ScopePlugin], opts.Plugins...)
	seen := map[string]bool{}
	for _, scope := range scopeOrder {
		for _, s := range byScope[scope] {
			if !seen[s.Name] {
				seen[s.Name] = true
				c.Servers = append(c.Servers, s)
			}
		}
	}
	slices.SortFunc(c.Servers, func(a, b ServerConfig) int { return strings.Compare(a.Name, b.Name) })
	return c
}

// projectKey is the key of a project in the local file: its absolute, cleaned path.
func projectKey(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return filepath.Clean(dir)
}

// parse reads the mcpServers object found under prefix (object keys) in data.
func (c *Config) parse(scope Scope, file string, data []byte, prefix []string, env map[string]string) []ServerConfig {
	raw, path, ok := c.descend(file, data, prefix)
	if !ok || raw == nil {
		return nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		c.Problems = append(c.Problems, Problem{File: file, Path: path, Msg: "want an object: " + err.Error()})
		return nil
	}
	serversRaw, ok := top["mcpServers"]
	if !ok || string(serversRaw) == "null" {
		return nil
	}
	path = join(path, "mcpServers")
	var servers map[string]json.RawMessage
	if err := json.Unmarshal(serversRaw, &servers); err != nil {
		c.Problems = append(c.Problems, Problem{File: file, Path: path, Msg: "want an object of servers"})
		return nil
	}
	var out []ServerConfig
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		sp := join(path, name)
		var s ServerConfig
		if err := json.Unmarshal(servers[name], &s); err != nil {
			msg := err.Error()
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				if te.Field != "" {
					sp = join(sp, te.Field)
				}
				msg = fmt.Sprintf("is %s, want %s", te.Value, te.Type)
			}
			c.Problems = append(c.Problems, Problem{File: file, Path: sp, Server: name, Msg: msg})
			continue
		}
		s.Name, s.Scope, s.File = name, scope, file
		if p, ok := validate(&s); !ok {
			p.File, p.Server = file, name
			p.Path = join(sp, p.Path)
			c.Problems = append(c.Problems, p)
			continue
		}
		if p, ok := validateOAuth(&s); !ok {
			p.File, p.Server = file, name
			p.Path = join(sp, p.Path)
			c.Problems = append(c.Problems, p)
			continue
		}
		missing := expandServer(&s, env)
		resolveKeyFile(&s, file)
		if len(missing) > 0 {
			c.Problems = append(c.Problems, Problem{File: file, Path: sp, Server: name, Warning: true,
				Msg: "environment variables not set and without default: " + strings.Join(missing, ", ")})
		}
		out = append(out, s)
	}
	return out
}

// descend finds the value under the object keys of prefix; a syntax error is reported with the
// line and column.
func (c *Config) descend(file string, data []byte, prefix []string) (json.RawMessage, string, bool) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, "", true
	}
	var raw json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		msg := err.Error()
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := lineCol(data, se.Offset)
			msg = fmt.Sprintf("line %d column %d: %v", line, col, se)
		}
		c.Problems = append(c.Problems, Problem{File: file, Msg: "invalid JSON: " + msg})
		return nil, "", false
	}
	var path string
	for _, k := range prefix {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			c.Problems = append(c.Problems, Problem{File: file, Path: path, Msg: "want an object"})
			return nil, "", false
		}
		path = join(path, k)
		if raw = m[k]; raw == nil {
			return nil, path, true
		}
	}
	return raw, path, true
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func lineCol(data []byte, off int64) (line, col int) {
	line, col = 1, 1
	for _, b := range data[:min(int(off), len(data))] {
		if b == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// validate settles the type and checks the fields it needs; the Problem's Path is relative.
func validate(s *ServerConfig) (Problem, bool) {
	if s.Type == "" {
		switch {
		case s.Command != "":
			s.Type = TypeStdio
		case s.URL != "":
			s.Type = TypeHTTP
		default:
			return Problem{Msg: "has neither command nor url"}, false
		}
	}
	if s.Type == "streamable-http" {
		s.Type = TypeHTTP
	}
	switch s.Type {
	case TypeStdio:
		if s.Command == "" {
			return Problem{Path: "command", Msg: "missing: a stdio server needs a command"}, false
		}
	case TypeHTTP, TypeSSE:
		if s.URL == "" {
			return Problem{Path: "url", Msg: fmt.Sprintf("missing: an %s server needs a url", s.Type)}, false
		}
	default:
		return Problem{Path: "type", Msg: fmt.Sprintf("%q is not one of %s", s.Type, strings.Join(Types, ", "))}, false
	}
	return Problem{}, true
}
