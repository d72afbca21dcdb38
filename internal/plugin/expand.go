package plugin

import (
	"maps"
	"slices"
	"strings"
)

// expandVars replaces ${NAME} for the plugin's own variables (CLAUDE_PLUGIN_ROOT,
// CLAUDE_PLUGIN_DATA) in s, as Claude Code does in hook commands and in MCP and LSP server
// commands, arguments and environment. Other ${…} (the environment's, ${user_config.…}) are
// left for the shell or the server's loader.
func expandVars(s string, vars map[string]string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var pairs []string
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		pairs = append(pairs, "${"+k+"}", vars[k])
	}
	return strings.NewReplacer(pairs...).Replace(s)
}

// envList renders vars as "KEY=value" entries, sorted, for a process environment.
func envList(vars map[string]string) []string {
	out := make([]string, 0, len(vars))
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		out = append(out, k+"="+vars[k])
	}
	return out
}
