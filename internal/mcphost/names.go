package mcphost

import (
	"strings"

	"github.com/keel-dev/keel/internal/tool"
)

// Normalize maps a server or tool name onto the characters a model API accepts in a tool name:
// anything outside [A-Za-z0-9_-] becomes '_'.
func Normalize(name string) string {
	b := []byte(name)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
		default:
			b[i] = '_'
		}
	}
	// Multi-byte runes became several '_'; that is fine: the result only has to be stable.
	return string(b)
}

// QualifiedName returns the name the model calls: mcp__<server>__<tool>, both parts normalised.
func QualifiedName(server, toolName string) string {
	return tool.MCPPrefix + Normalize(server) + "__" + Normalize(toolName)
}

// ParseName splits a fully qualified MCP tool name at the first "__" after the server part, so
// mcp__my__server__tool is server "my", tool "server__tool". ok is false for a name that is not
// an MCP tool name.
func ParseName(name string) (server, toolName string, ok bool) {
	rest, found := strings.CutPrefix(name, tool.MCPPrefix)
	if !found {
		return "", "", false
	}
	server, toolName, found = strings.Cut(rest, "__")
	if !found || server == "" || toolName == "" {
		return "", "", false
	}
	return server, toolName, true
}
