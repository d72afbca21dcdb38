package inspect

import (
	"context"
	"encoding/json"
	"strings"
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

// ContextUsage measures what the next request of the main agent would send: the system
// prompt less the memory files in it, the built-in and the MCP tools, the memory files, the
// messages, the buffer kept free below the window for compaction, and what is left.
func (i *Inspector) ContextUsage(ctx context.Context) ContextUsage {
	var sysBytes int
	if i.c.System != nil {
		for _, b := range i.c.System(ctx) {
			sysBytes += len(b.Text)
		}
	}
	var toolBytes, mcpBytes int
	if i.c.Tools != nil {
		for _, t := range i.c.Tools(ctx) {
			n := len(t.Name()) + len(t.Description()) + len(t.InputSchema())
			if isMCPName(t.Name()) {
				mcpBytes += n
			} else {
				toolBytes += n
			}
		}
	}
	var msgBytes int
	if i.c.History != nil {
		for _, m := range i.c.History() {
			b, _ := json.Marshal(m.Content)
			msgBytes += len(b)
		}
	}
	var memTokens int64
	var mem []MemoryShare
	for _, f := range i.MemoryFiles() {
		t := tokensOf(len(f.Content))
		memTokens += t
		mem = append(mem, MemoryShare{Path: f.Path, Kind: f.Kind.SDKType(), Tokens: t})
	}
	window, threshold := call(i.c.Window), call(i.c.Threshold)
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
	buffer := window - threshold
	free := max(window-total-buffer, 0)
	parts := append(used, ContextPart{ID: "autocompact_buffer", Name: "Autocompact buffer", Tokens: buffer, Kind: "buffer"},
		ContextPart{ID: "free_space", Name: "Free space", Tokens: free, Kind: "free"})
	var model string
	if i.c.Model != nil {
		model = i.c.Model()
	}
	return ContextUsage{Parts: parts, Window: window, Model: model, Memory: mem}
}

func call(f func() int64) int64 {
	if f == nil {
		return 0
	}
	return f()
}

func isMCPName(name string) bool { return strings.HasPrefix(name, "mcp__") && len(name) > 5 }
