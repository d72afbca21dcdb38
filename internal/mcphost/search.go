package mcphost

import (
	"context"

	"github.com/keel-dev/keel/internal/tool"
)

// Tool search modes (--tool-search).
const (
	SearchAuto = "auto"
	SearchOn   = "on"
	SearchOff  = "off"
)

// ToolSearchOptions configures deferral of MCP tool schemas.
type ToolSearchOptions struct {
	// Mode is auto (the default), on or off.
	Mode string
	// ContextWindow is the model's window in tokens (default 200000), and Threshold the share of
	// it (default 0.10) the MCP schemas may take before auto mode defers them.
	ContextWindow int
	Threshold     float64
}

// Deferring reports whether the next request defers the MCP tools' schemas: sends them by
// name only until the model searches for them (the provider's tool search, or keel's
// ToolSearch where the provider has none; the session decides which). Auto mode defers once
// the schemas would take more than the threshold share of the context window.
func (m *Manager) Deferring(ctx context.Context) bool { return m.deferring(m.Tools(ctx)) }

func (m *Manager) deferring(tools []tool.Tool) bool {
	if len(tools) == 0 {
		return false
	}
	o := m.opts.ToolSearch
	switch o.Mode {
	case SearchOn:
		return true
	case SearchOff:
		return false
	}
	window, share := o.ContextWindow, o.Threshold
	if window <= 0 {
		window = 200000
	}
	if share <= 0 {
		share = 0.10
	}
	return float64(SchemaTokens(tools)) > share*float64(window)
}

// SchemaTokens estimates the tokens the tools' definitions take (≈4 characters a token).
func SchemaTokens(tools []tool.Tool) int {
	n := 0
	for _, t := range tools {
		n += len(t.Name()) + len(t.Description()) + len(t.InputSchema())
	}
	return n / 4
}
