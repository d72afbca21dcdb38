package session

import (
	"context"
	"encoding/json"
)

// ContextPart is one part of what the next request carries.
type ContextPart struct {
	ID, Name string
	Tokens   int64
	// Kind is used, free or buffer.
	Kind string
}

// ContextUsage is the next request's context, by part, against the model's window.
type ContextUsage struct {
	Parts  []ContextPart
	Window int64
	Model  string
	// Memory is each memory file's share.
	Memory []MemoryShare
}

// MemoryShare is one memory file in the context.
type MemoryShare struct {
	Path, Kind string
	Tokens     int64
}

// ContextUsage measures what the next request of the main agent would send.
func (i *Inspector) ContextUsage(ctx context.Context) ContextUsage {
	s := i.s
	sys := s.conf.systemPrompt(ctx)
	var sysBytes int
	for _, b := range sys.Blocks {
		sysBytes += len(b.Text)
	}
	var toolBytes, mcpBytes int
	for _, t := range s.pool(ctx).Tools() {
		n := len(t.Name()) + len(t.Description()) + len(t.InputSchema())
		if isMCPName(t.Name()) {
			mcpBytes += n
		} else {
			toolBytes += n
		}
	}
	var msgBytes int
	for _, m := range s.History() {
		b, _ := json.Marshal(m.Content)
		msgBytes += len(b)
	}
	var memTokens int64
	var mem []MemoryShare
	for _, f := range i.MemoryFiles() {
		t := tokensOf(len(f.Content))
		memTokens += t
		mem = append(mem, MemoryShare{Path: f.Path, Kind: f.Kind.SDKType(), Tokens: t})
	}
	window := s.opts.ContextWindow
	if window == 0 {
		window = DefaultContextWindow
	}
	used := []ContextPart{
		{ID: "system_prompt", Name: "System prompt", Tokens: tokensOf(sysBytes) - memTokens, Kind: "used"},
		{ID: "system_tools", Name: "System tools", Tokens: tokensOf(toolBytes), Kind: "used"},
		{ID: "mcp_tools", Name: "MCP tools", Tokens: tokensOf(mcpBytes), Kind: "used"},
		{ID: "memory_files", Name: "Memory files", Tokens: memTokens, Kind: "used"},
		{ID: "messages", Name: "Messages", Tokens: tokensOf(msgBytes), Kind: "used"},
	}
	var total int64
	for _, p := range used {
		total += p.Tokens
	}
	buffer := window - s.compaction.compactThreshold()
	free := max(window-total-buffer, 0)
	parts := append(used, ContextPart{ID: "autocompact_buffer", Name: "Autocompact buffer", Tokens: buffer, Kind: "buffer"},
		ContextPart{ID: "free_space", Name: "Free space", Tokens: free, Kind: "free"})
	return ContextUsage{Parts: parts, Window: window, Model: s.switches.Model(), Memory: mem}
}

func isMCPName(name string) bool { return len(name) > 5 && name[:5] == "mcp__" }
