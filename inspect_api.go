package keel

import "context"

// ContextPart is one part of what the next request would carry: the system prompt, the
// tools, MCP tools, memory files, the messages, and the room left.
type ContextPart struct {
	Name   string
	Tokens int64
	// Kind is "used", "buffer" (kept free for compaction) or "free".
	Kind string
}

// ContextUsage is the next request's context by part, against the model's window, as the
// Agent SDK's get_context_usage reports it. Tokens are estimated from sizes.
type ContextUsage struct {
	Parts  []ContextPart
	Window int64
	Model  string
}

// Used is the sum of the parts in use.
func (u ContextUsage) Used() int64 {
	var n int64
	for _, p := range u.Parts {
		if p.Kind == "used" {
			n += p.Tokens
		}
	}
	return n
}

// ContextUsage measures what the next request of the main agent would send.
func (s *Session) ContextUsage(ctx context.Context) ContextUsage {
	cu := s.s.ContextUsage(ctx)
	out := ContextUsage{Window: cu.Window, Model: cu.Model}
	for _, p := range cu.Parts {
		out.Parts = append(out.Parts, ContextPart{Name: p.Name, Tokens: p.Tokens, Kind: p.Kind})
	}
	return out
}
