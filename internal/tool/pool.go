package tool

import (
	"slices"
	"strings"
)

// Pool is the ordered set of tools an agent offers the model. The order is part of every
// request prefix: built-ins first in their fixed order, then MCP tools sorted by name.
// Interleaving would move the tool-list cache breakpoint and invalidate every later cache key.
type Pool struct {
	tools  []Tool
	byName map[string]Tool
}

// MCPPrefix starts the name of every MCP tool.
const MCPPrefix = "mcp__"

// Assemble builds a pool: builtins in the order given, then the MCP tools sorted by name; a
// name seen before is dropped (the first wins), so a server cannot shadow a built-in.
func Assemble(builtins, mcp []Tool) *Pool {
	sorted := slices.Clone(mcp)
	slices.SortStableFunc(sorted, func(a, b Tool) int { return strings.Compare(a.Name(), b.Name()) })
	p := &Pool{byName: map[string]Tool{}}
	for _, t := range append(slices.Clone(builtins), sorted...) {
		if _, dup := p.byName[t.Name()]; dup {
			continue
		}
		p.byName[t.Name()] = t
		p.tools = append(p.tools, t)
	}
	return p
}

// Tools returns the tools in pool order. The slice must not be modified.
func (p *Pool) Tools() []Tool { return p.tools }

// Lookup returns the tool called name.
func (p *Pool) Lookup(name string) (Tool, bool) {
	t, ok := p.byName[name]
	return t, ok
}

// Names returns the tool names in pool order.
func (p *Pool) Names() []string {
	names := make([]string, len(p.tools))
	for i, t := range p.tools {
		names[i] = t.Name()
	}
	return names
}

// Len returns the number of tools.
func (p *Pool) Len() int { return len(p.tools) }

// Filter returns a pool of the tools keep accepts, in the same order.
func (p *Pool) Filter(keep func(Tool) bool) *Pool {
	var ts []Tool
	for _, t := range p.tools {
		if keep(t) {
			ts = append(ts, t)
		}
	}
	return Assemble(ts, nil)
}

// IsMCP reports whether name is an MCP tool's fully qualified name.
func IsMCP(name string) bool { return strings.HasPrefix(name, MCPPrefix) }
