package session

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/keel-dev/keel/internal/mcphost"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/prompt"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/skill"
	"github.com/keel-dev/keel/internal/subagent"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/toolsearch"
)

// listingObserver tells one agent about the lists that change during a session — agent
// types, skills, deferred tools, MCP server instructions (see [prompt.Listing]) — in full
// before its first request and then only what changed, at request boundaries. What it knows
// the model knows starts from the agent's history, so a resumed session, a fork child and a
// continued subagent are told only what is new to them.
type listingObserver struct {
	s    *Session
	pool func(context.Context) *tool.Pool
	// mu guards known.
	mu    sync.Mutex
	known prompt.Listing
}

func (s *Session) newListing(pool func(context.Context) *tool.Pool, history []message.Message) *listingObserver {
	return &listingObserver{s: s, pool: pool, known: prompt.ParseListing(history)}
}

func (o *listingObserver) Observe(ctx context.Context) []message.Block {
	cur := o.s.listingFor(ctx, o.pool(ctx))
	o.mu.Lock()
	defer o.mu.Unlock()
	blocks := prompt.Announce(o.known, cur)
	if blocks != nil {
		o.known = cur
	}
	return blocks
}

// reset starts over from a history that replaced the agent's (a compaction).
func (o *listingObserver) reset(history []message.Message) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.known = prompt.ParseListing(history)
}

// listingFor is what an agent with this pool should know: the agent types if it can start
// agents, the skills if it can load them, its deferred tools, and the instructions of the MCP
// servers it can reach.
func (s *Session) listingFor(ctx context.Context, pool *tool.Pool) prompt.Listing {
	var l prompt.Listing
	if _, ok := pool.Lookup(subagent.ToolName); ok && s.agents != nil {
		l.Agents = s.agents.runner.AgentTypes()
	}
	if _, ok := pool.Lookup(skill.ToolName); ok {
		l.Skills, l.SkillsOmitted = s.sk.Catalog().Entries()
	}
	deferred := map[string]bool{}
	for _, t := range s.deferredTools(ctx) {
		deferred[t.Name()] = true
	}
	for _, t := range pool.Tools() {
		if deferred[t.Name()] {
			l.Deferred = append(l.Deferred, t.Name())
		}
	}
	l.DeferredSearch = toolsearch.Name
	if s.nativeSearch {
		l.DeferredSearch = provider.NativeToolSearch(s.opts.Provider)
	}
	if s.mcp != nil {
		_, resources := pool.Lookup(mcphost.ListResourcesName)
		for _, in := range s.mcp.Instructions() {
			prefix := tool.MCPPrefix + mcphost.Normalize(in.Server) + "__"
			if resources || slices.ContainsFunc(pool.Tools(), func(t tool.Tool) bool { return strings.HasPrefix(t.Name(), prefix) }) {
				l.MCP = append(l.MCP, prompt.MCPServer{Name: in.Server, Instructions: in.Text})
			}
		}
	}
	return l
}
