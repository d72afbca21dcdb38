package session

import (
	"context"

	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/subagent"
	"github.com/keel-dev/keel/internal/tool"
)

// prepare finishes every request of this session's agents before it is sent: rarely needed
// tools are deferred, then the cache breakpoints are placed.
func (s *Session) prepare(r *provider.Request) {
	s.deferTools(context.Background(), r)
	provider.PlaceBreakpoints(r, s.ttl)
}

// pool is the main agent's tools for the next request: built-ins and custom tools in their
// fixed order, the MCP resource tools, ToolSearch where the provider cannot search deferred
// tools itself, then the MCP tools of the current generation sorted by name. Deferred tools
// are in the pool (so filters, listings and calls see them); deferTools keeps their schemas
// out of the request.
func (s *Session) pool(ctx context.Context) *tool.Pool {
	return s.mainPlanFilter(s.agentPool(ctx))
}

// agentPool is the pool subagents are filtered from: the main agent's, with ExitPlanMode
// whatever the main agent's mode (a definition may run its agent in plan mode).
func (s *Session) agentPool(ctx context.Context) *tool.Pool {
	fixed := s.fixedTools()
	var mcpTools []tool.Tool
	if s.mcp != nil {
		mcpTools = s.mcp.Tools(ctx)
	}
	if !s.nativeSearch && len(s.deferredTools(ctx)) > 0 {
		fixed = append(fixed, s.searchTool)
	}
	return s.mainFilter(tool.Assemble(fixed, mcpTools))
}

// ToolNames returns the names of the tools the main agent offers, in request order.
func (s *Session) ToolNames() []string { return s.pool(context.Background()).Names() }

// mainFilter narrows the main thread's pool to an --agent's tool lists. Only the lists apply:
// the blacklists of subagents are for agents that have a parent.
func (s *Session) mainFilter(p *tool.Pool) *tool.Pool {
	p = s.sdkFilter(p)
	if s.mainAgent == nil {
		return p
	}
	return subagent.Filter{MainAgent: true, Tools: s.mainAgent.Tools, Disallowed: s.mainAgent.DisallowedTools}.Apply(p)
}
