package agentdef

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/keel-dev/keel/internal/frontmatter"
	"github.com/keel-dev/keel/internal/permission"
)

// mcpTypes are the transports an inline MCP server may use.
var mcpTypes = []string{"stdio", "http", "sse"}

// setMCPServers reads server references and inline configurations. Accepted shapes: a list
// whose entries are names or maps of name to config (Claude Code's form), a map of name to
// config (the .mcp.json form), or a string of names.
func setMCPServers(d *decoder, f frontmatter.Field) {
	var servers []MCPServer
	add := func(name string, cfg any) bool {
		s, ok := d.mcpServer(f.Line, name, cfg)
		if ok {
			servers = append(servers, s)
		}
		return ok
	}
	switch v := f.Value.(type) {
	case nil:
		return
	case string:
		for _, n := range permission.SplitToolList(v) {
			servers = append(servers, MCPServer{Name: n})
		}
	case []any:
		for i, item := range v {
			switch item := item.(type) {
			case string:
				servers = append(servers, MCPServer{Name: strings.TrimSpace(item)})
			case map[string]any:
				for _, name := range sortedKeys(item) {
					if !add(name, item[name]) {
						return
					}
				}
			default:
				d.errorf(f.Line, "mcpServers entry %d must be a server name or a map of name to config, got %s", i+1, kind(item))
				return
			}
		}
	case map[string]any:
		for _, name := range sortedKeys(v) {
			if !add(name, v[name]) {
				return
			}
		}
	default:
		d.errorf(f.Line, "mcpServers must be a list of server names or configs, got %s", kind(f.Value))
		return
	}
	d.def.MCPServers = servers
}

// mcpServer checks one inline config the way .mcp.json entries are checked: a transport type
// (stdio when absent and a command is given, http when absent and a url is given), a command
// for stdio, a url for http and sse. The config is kept as written, with the type filled in.
func (d *decoder) mcpServer(line int, name string, cfg any) (MCPServer, bool) {
	if cfg == nil {
		return MCPServer{Name: name}, true // "name:" with nothing under it refers to a server
	}
	m, ok := cfg.(map[string]any)
	if !ok {
		d.errorf(line, "mcpServers %q: config must be a map, got %s", name, kind(cfg))
		return MCPServer{}, false
	}
	typ, _ := m["type"].(string)
	if _, has := m["type"]; has && typ == "" {
		d.errorf(line, "mcpServers %q: type %s is not one of %s", name, quoted(m["type"]), strings.Join(mcpTypes, ", "))
		return MCPServer{}, false
	}
	if typ == "" {
		switch {
		case m["command"] != nil:
			typ = "stdio"
		case m["url"] != nil:
			typ = "http"
		default:
			d.errorf(line, "mcpServers %q: needs a \"command\" (stdio) or a \"url\" (http, sse)", name)
			return MCPServer{}, false
		}
	}
	if !slices.Contains(mcpTypes, typ) {
		d.errorf(line, "mcpServers %q: type %q is not one of %s", name, typ, strings.Join(mcpTypes, ", "))
		return MCPServer{}, false
	}
	need := "url"
	if typ == "stdio" {
		need = "command"
	}
	if s, ok := m[need].(string); !ok || strings.TrimSpace(s) == "" {
		d.errorf(line, "mcpServers %q: a %s server needs a %q string", name, typ, need)
		return MCPServer{}, false
	}
	if args, has := m["args"]; has {
		if l, ok := args.([]any); !ok || slices.ContainsFunc(l, func(a any) bool { _, ok := scalar(a); return !ok }) {
			d.errorf(line, "mcpServers %q: args must be a list of strings", name)
			return MCPServer{}, false
		}
	}
	out := maps.Clone(m)
	out["type"] = typ
	raw, err := json.Marshal(out)
	if err != nil {
		d.errorf(line, "mcpServers %q: %v", name, err)
		return MCPServer{}, false
	}
	return MCPServer{Name: name, Config: raw}, true
}

// hookTypes are the kinds of hook command settings accept.
var hookTypes = []string{"command", "prompt", "agent", "http"}

// setHooks checks the outline of a hooks block (event → list of matchers → list of hooks with
// a type and what that type needs) and keeps it raw for the hooks package.
func setHooks(d *decoder, f frontmatter.Field) {
	if f.Value == nil {
		return
	}
	events, ok := f.Value.(map[string]any)
	if !ok {
		d.errorf(f.Line, "hooks must be a map of event name to a list of matchers, got %s", kind(f.Value))
		return
	}
	for _, ev := range sortedKeys(events) {
		if err := checkMatchers(ev, events[ev]); err != "" {
			d.errorf(f.Line, "hooks.%s", err)
			return
		}
	}
	raw, err := json.Marshal(events)
	if err != nil {
		d.errorf(f.Line, "hooks: %v", err)
		return
	}
	d.def.Hooks = raw
}

func checkMatchers(ev string, v any) string {
	matchers, ok := v.([]any)
	if !ok {
		return fmt.Sprintf("%s must be a list of matchers, got %s", ev, kind(v))
	}
	for i, m := range matchers {
		mm, ok := m.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s[%d] must be a map with \"hooks\", got %s", ev, i, kind(m))
		}
		if matcher, has := mm["matcher"]; has && matcher != nil {
			if _, ok := matcher.(string); !ok {
				return fmt.Sprintf("%s[%d]: matcher must be a string, got %s", ev, i, kind(matcher))
			}
		}
		hooks, ok := mm["hooks"].([]any)
		if !ok {
			return fmt.Sprintf("%s[%d]: \"hooks\" must be a list, got %s", ev, i, kind(mm["hooks"]))
		}
		for j, h := range hooks {
			if err := checkHook(h); err != "" {
				return fmt.Sprintf("%s[%d].hooks[%d]: %s", ev, i, j, err)
			}
		}
	}
	return ""
}

func checkHook(h any) string {
	hm, ok := h.(map[string]any)
	if !ok {
		return fmt.Sprintf("must be a map, got %s", kind(h))
	}
	if hm["type"] == nil {
		return fmt.Sprintf("needs a \"type\": one of %s", strings.Join(hookTypes, ", "))
	}
	typ, _ := hm["type"].(string)
	if !slices.Contains(hookTypes, typ) {
		return fmt.Sprintf("type %s is not one of %s", quoted(hm["type"]), strings.Join(hookTypes, ", "))
	}
	need := map[string]string{"command": "command", "prompt": "prompt", "agent": "prompt", "http": "url"}[typ]
	if s, ok := hm[need].(string); !ok || strings.TrimSpace(s) == "" {
		return fmt.Sprintf("a %s hook needs a %q string", typ, need)
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
