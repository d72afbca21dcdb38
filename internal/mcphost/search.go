package mcphost

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/keel-dev/keel/internal/tool"
)

// Tool search modes (--tool-search).
const (
	SearchAuto = "auto"
	SearchOn   = "on"
	SearchOff  = "off"
)

// ToolSearchName is the search tool's name, as Claude Code calls it.
const ToolSearchName = "ToolSearch"

// ToolSearchOptions configures deferral of MCP tool schemas.
type ToolSearchOptions struct {
	// Mode is auto (the default), on or off.
	Mode string
	// ContextWindow is the model's window in tokens (default 200000), and Threshold the share of
	// it (default 0.10) the MCP schemas may take before auto mode defers them.
	ContextWindow int
	Threshold     float64
}

// searchState remembers which deferred tools ToolSearch has loaded, in discovery order, with
// the schema each was loaded with: a tool whose schema changed in a later generation is dropped,
// so the model never works from a stale schema.
type searchState struct {
	m *Manager
	// mu guards found.
	mu    sync.Mutex
	found []foundTool
}

type foundTool struct {
	name   string
	schema string
}

func newSearchState(m *Manager) *searchState { return &searchState{m: m} }

// Deferring reports whether the next request defers MCP tool schemas behind ToolSearch.
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

// Pool assembles the tools of the next request: builtins in their order, then either every MCP
// tool sorted by name, or — when deferring — ToolSearch followed by the tools it discovered, in
// discovery order, so each discovery appends to the tool list and the prefix stays cached. The
// resource tools follow the builtins whenever servers are configured.
//
// Providers with native deferred loading (provider.ToolSpec.DeferLoading) can instead be given
// every tool with the deferred ones marked; this fallback works everywhere.
func (m *Manager) Pool(ctx context.Context, builtins []tool.Tool) *tool.Pool {
	tools := m.Tools(ctx)
	fixed := slices.Clone(builtins)
	if len(m.conns) > 0 {
		fixed = append(fixed, m.ResourceTools()...)
	}
	if !m.deferring(tools) {
		return tool.Assemble(fixed, tools)
	}
	fixed = append(fixed, m.SearchTool())
	return tool.Assemble(append(fixed, m.discovered(tools)...), nil)
}

// NativePool assembles the tools of the next request for a provider that defers tools itself
// (the Anthropic API's tool search): builtins, then every MCP tool sorted by name — the order
// and bytes of a pool that defers nothing, so the list never changes with what the model
// finds. There is no ToolSearch tool; NativeDeferred says which tools to send deferred.
func (m *Manager) NativePool(ctx context.Context, builtins []tool.Tool) *tool.Pool {
	fixed := slices.Clone(builtins)
	if len(m.conns) > 0 {
		fixed = append(fixed, m.ResourceTools()...)
	}
	return tool.Assemble(fixed, m.Tools(ctx))
}

// NativeDeferred reports, by name, the MCP tools a provider with native tool search should
// receive with DeferLoading: every current MCP tool when deferring (the provider's search
// finds them; a tool it found stays deferred, since the API loads it from the history and
// flipping the flag would change the cached tool list), none otherwise.
func (m *Manager) NativeDeferred(ctx context.Context) map[string]bool {
	tools := m.Tools(ctx)
	if !m.deferring(tools) {
		return nil
	}
	out := make(map[string]bool, len(tools))
	for _, t := range tools {
		out[t.Name()] = true
	}
	return out
}

// Discovered returns the deferred tools ToolSearch has loaded that are still current, in
// discovery order.
func (m *Manager) Discovered(ctx context.Context) []tool.Tool { return m.discovered(m.Tools(ctx)) }

func (m *Manager) discovered(current []tool.Tool) []tool.Tool {
	s := m.search
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []tool.Tool
	keep := s.found[:0]
	for _, f := range s.found {
		i := slices.IndexFunc(current, func(t tool.Tool) bool { return t.Name() == f.name })
		if i < 0 || string(current[i].InputSchema()) != f.schema {
			continue // gone, or changed in a later generation: the model must search again
		}
		keep = append(keep, f)
		out = append(out, current[i])
	}
	s.found = keep
	return out
}

// DeferredListing renders the deferred tools not yet discovered, one line each, for the text
// block the session adds to the request; "" when nothing is deferred.
func (m *Manager) DeferredListing(ctx context.Context) string {
	tools := m.Tools(ctx)
	if !m.deferring(tools) {
		return ""
	}
	disc := m.discovered(tools)
	var b strings.Builder
	b.WriteString("The following MCP tools are available but their schemas are not loaded. Call " + ToolSearchName +
		" with a query (or \"select:name1,name2\") to load them before use:\n")
	for _, t := range tools {
		if slices.Contains(disc, t) {
			continue
		}
		fmt.Fprintf(&b, "- %s: %s\n", t.Name(), firstLine(t.Description()))
	}
	return b.String()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > 120 {
		s = string(r[:120]) + "…"
	}
	return s
}

type searchIn struct {
	Query      string `json:"query"`
	MaxResults int    `json:"max_results,omitempty"`
}

const searchSchema = `{"type":"object","properties":{"query":{"type":"string","description":"Keywords to search MCP tool names and descriptions, or \"select:name1,name2\" to load tools by name."},"max_results":{"type":"integer","description":"Most tools to return (default 5).","minimum":1}},"required":["query"],"additionalProperties":false}`

// SearchTool returns the ToolSearch tool.
func (m *Manager) SearchTool() tool.Tool {
	return tool.New(tool.Spec[searchIn]{
		Name:              ToolSearchName,
		Description:       "Search the deferred MCP tools and load the full schemas of the matches, so they can be called in later turns. Use \"select:name1,name2\" to load tools by exact name.",
		Schema:            json.RawMessage(searchSchema),
		IsReadOnly:        tool.Always[searchIn],
		IsConcurrencySafe: tool.Always[searchIn],
		Run: func(ctx context.Context, _ *tool.Env, in searchIn) tool.Result {
			return m.runSearch(ctx, in)
		},
	})
}

func (m *Manager) runSearch(ctx context.Context, in searchIn) tool.Result {
	tools := m.Tools(ctx)
	max := in.MaxResults
	if max <= 0 {
		max = 5
	}
	var hits []tool.Tool
	if sel, ok := strings.CutPrefix(strings.TrimSpace(in.Query), "select:"); ok {
		var missing []string
		for _, n := range strings.Split(sel, ",") {
			n = strings.TrimSpace(n)
			if i := slices.IndexFunc(tools, func(t tool.Tool) bool { return t.Name() == n }); i >= 0 {
				hits = append(hits, tools[i])
			} else if n != "" {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 && len(hits) == 0 {
			return tool.Errorf("no MCP tool called %s", strings.Join(missing, ", "))
		}
	} else {
		hits = rank(tools, in.Query, max)
	}
	if len(hits) == 0 {
		return tool.Text("No matching MCP tools.")
	}
	s := m.search
	s.mu.Lock()
	for _, t := range hits {
		if !slices.ContainsFunc(s.found, func(f foundTool) bool { return f.name == t.Name() }) {
			s.found = append(s.found, foundTool{name: t.Name(), schema: string(t.InputSchema())})
		}
	}
	s.mu.Unlock()
	var b strings.Builder
	b.WriteString("<functions>\n")
	for _, t := range hits {
		def, _ := json.Marshal(struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		}{t.Name(), t.Description(), t.InputSchema()})
		fmt.Fprintf(&b, "<function>%s</function>\n", def)
	}
	b.WriteString("</functions>\nThese tools are now loaded and can be called.")
	return tool.Text(b.String())
}

// rank scores tools by query terms found in the name (weighted) and description.
func rank(tools []tool.Tool, query string, max int) []tool.Tool {
	terms := strings.Fields(strings.ToLower(query))
	type scored struct {
		t     tool.Tool
		score int
	}
	var s []scored
	for _, t := range tools {
		name, desc := strings.ToLower(t.Name()), strings.ToLower(t.Description())
		n := 0
		for _, term := range terms {
			if strings.Contains(name, term) {
				n += 3
			}
			if strings.Contains(desc, term) {
				n++
			}
		}
		if n > 0 {
			s = append(s, scored{t, n})
		}
	}
	slices.SortStableFunc(s, func(a, b scored) int { return b.score - a.score })
	var out []tool.Tool
	for i := 0; i < len(s) && i < max; i++ {
		out = append(out, s[i].t)
	}
	return out
}
