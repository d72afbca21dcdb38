package session

import (
	"context"
	"slices"

	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/toolsearch"
)

// deferredTools are the session's tools whose schemas stay out of requests until the model
// loads them, in pool order: built-in and custom tools that declare [tool.Deferrable] (the
// shells' and tasks' helpers, SendMessage, the MCP resource tools, and whatever later tools
// say so), and the MCP tools while the MCP manager defers them. Their names reach the model
// once, in the listing message (see listing.go).
func (s *Session) deferredTools(ctx context.Context) []tool.Tool {
	var out []tool.Tool
	for _, t := range s.fixedTools() {
		if tool.IsDeferred(t) {
			out = append(out, t)
		}
	}
	if s.mcp != nil && s.mcp.Deferring(ctx) {
		out = append(out, tool.Assemble(nil, s.mcp.Tools(ctx)).Tools()...)
	}
	return out
}

// fixedTools are the tools before the MCP servers' in every pool: built-ins in their fixed
// order, custom tools, and the MCP resource tools when servers are configured.
func (s *Session) fixedTools() []tool.Tool {
	fixed := append(append([]tool.Tool(nil), s.builtins...), s.opts.Tools...)
	if s.mcp != nil && s.mcp.Len() > 0 {
		fixed = append(fixed, s.mcp.ResourceTools()...)
	}
	return fixed
}

// deferTools applies deferral to a request about to be sent; every agent's request passes
// here (see prepare). With a provider that searches tools itself, the deferred tools stay in
// place flagged DeferLoading — the list is the same bytes whatever the model has found, and
// the API loads a found tool where the history references it. Otherwise they are left out,
// except those ToolSearch has loaded, which follow the rest in the order they were found, so
// a discovery appends to the tool list. A request without ToolSearch (an --agent whose tools
// leave it out) gets every schema: nothing could load one. The tool list is replaced by a
// copy; the pool's specs are never written to.
func (s *Session) deferTools(ctx context.Context, r *provider.Request) {
	deferred := s.deferredTools(ctx)
	if len(deferred) == 0 {
		return
	}
	names := map[string]bool{}
	for _, t := range deferred {
		names[t.Name()] = true
	}
	tools := slices.Clone(r.Tools)
	if s.nativeSearch {
		for i := range tools {
			if names[tools[i].Name] {
				tools[i].DeferLoading = true
			}
		}
		r.Tools = tools
		return
	}
	if !slices.ContainsFunc(tools, func(t provider.ToolSpec) bool { return t.Name == toolsearch.Name }) {
		return
	}
	kept := tools[:0]
	held := map[string]provider.ToolSpec{}
	for _, t := range tools {
		if names[t.Name] {
			held[t.Name] = t
			continue
		}
		kept = append(kept, t)
	}
	for _, t := range s.search.Discovered(deferred) {
		if spec, ok := held[t.Name()]; ok {
			kept = append(kept, spec)
		}
	}
	r.Tools = kept
}
