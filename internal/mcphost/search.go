package mcphost

// ToolSearchOptions configures deferral.
type ToolSearchOptions struct{}

type searchState struct{ m *Manager }

func newSearchState(m *Manager) *searchState { return &searchState{m: m} }
