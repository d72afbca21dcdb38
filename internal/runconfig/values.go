package runconfig

import (
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/settings"
)

// PermissionModes are the modes a run may be asked for: the settings' defaultMode values
// (every [permission.Mode] but bubble, which only children take).
func PermissionModes() []string { return slices.Clone(settings.PermissionModes) }

// TeammateModes are the values of [Team.Mode] (the teammateMode setting's).
func TeammateModes() []string { return settings.TeammateModes }

// ToolSearchModes are the values of [MCP.ToolSearch].
var ToolSearchModes = []string{"auto", "on", "off"}

// ThinkingModes are the values of [Config.Thinking].
var ThinkingModes = []string{"adaptive", "enabled", "disabled"}

// SplitToolList splits tool-list values as Claude Code does (--allowedTools "Bash(git:*) Edit",
// comma- or space-separated, parentheses kept together) into one rule each.
func SplitToolList(values []string) []string {
	var out []string
	for _, v := range values {
		out = append(out, permission.SplitToolList(v)...)
	}
	return out
}

// SplitCommas splits a comma-separated list (--tools, --setting-sources), dropping empty
// entries; the result is never nil.
func SplitCommas(s string) []string {
	out := []string{}
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}
