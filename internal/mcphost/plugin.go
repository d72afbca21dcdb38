package mcphost

import (
	"encoding/json"
	"maps"
	"slices"
)

// ScopePlugin marks the servers an enabled plugin declares. A plugin runs code by design, so
// they are gated when the plugin is enabled (an untrusted project cannot enable one), not by
// workspace trust.
const ScopePlugin Scope = "plugin"

// PluginServerName is the name of a plugin's server, as Claude Code names it: its tools are
// mcp__plugin_<plugin>_<server>__<tool>, so two plugins' servers never collide.
func PluginServerName(plugin, server string) string {
	return "plugin_" + plugin + "_" + server
}

// ParsePlugin reads the servers of one plugin document: {"mcpServers": {…}} (a .mcp.json in
// the wrapper, or a manifest with inline servers) or a bare map of servers (the plugin form of
// .mcp.json). ${VAR} and ${VAR:-default} expand from env, which carries the plugin's
// CLAUDE_PLUGIN_ROOT and CLAUDE_PLUGIN_DATA beside the environment. Servers are named with
// [PluginServerName]; a bad entry is a problem and the others still load.
func ParsePlugin(plugin, file string, data []byte, env map[string]string) ([]ServerConfig, []Problem) {
	c := &Config{}
	raw, _, ok := c.descend(file, data, nil)
	if !ok || raw == nil {
		return nil, c.Problems
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, []Problem{{File: file, Msg: "want an object of servers: " + err.Error()}}
	}
	if _, wrapped := top["mcpServers"]; !wrapped {
		servers := map[string]json.RawMessage{}
		for _, name := range slices.Sorted(maps.Keys(top)) {
			var entry map[string]json.RawMessage
			if json.Unmarshal(top[name], &entry) != nil {
				c.Problems = append(c.Problems, Problem{File: file, Path: name, Warning: true,
					Msg: "is not a server object (ignored)"})
				continue
			}
			servers[name] = top[name]
		}
		data, _ = json.Marshal(map[string]any{"mcpServers": servers})
	}
	out := c.parse(ScopePlugin, file, data, nil, env)
	for i := range out {
		out[i].Name = PluginServerName(plugin, out[i].Name)
	}
	return out, c.Problems
}
