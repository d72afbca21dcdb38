// Package toolsearch is keel's own tool search: the fallback that keeps rarely needed tools
// (built-ins that declare [tool.Deferrable], MCP tools past the schema budget) out of the
// request for providers without deferred loading of their own. Their names reach the model in
// a message; the ToolSearch tool returns the full schemas of the ones it asks for, and a
// [Searcher] remembers them so they join the tool list of later requests.
package toolsearch

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/keel-dev/keel/internal/tool"
)

// Name is the search tool's name, as Claude Code calls it.
const Name = "ToolSearch"

// DefaultMaxResults is how many tools a keyword search returns unless asked for more.
const DefaultMaxResults = 5

// Searcher remembers which deferred tools ToolSearch has loaded, in discovery order, with the
// schema each was loaded with: a tool whose schema changed since (a new MCP generation) is
// dropped, so the model never works from a stale schema. It is safe for concurrent use; one
// Searcher serves every agent of a session, so what one agent loaded the others see.
type Searcher struct {
	// mu guards found.
	mu    sync.Mutex
	found []found
}

type found struct {
	name   string
	schema string
}

// New returns an empty Searcher.
func New() *Searcher { return &Searcher{} }

// Discovered returns the tools of deferred that were loaded with their current schema, in
// discovery order, forgetting loaded tools that are gone or changed.
func (s *Searcher) Discovered(deferred []tool.Tool) []tool.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []tool.Tool
	keep := s.found[:0]
	for _, f := range s.found {
		i := slices.IndexFunc(deferred, func(t tool.Tool) bool { return t.Name() == f.name })
		if i < 0 || string(deferred[i].InputSchema()) != f.schema {
			continue // gone, or changed in a later generation: the model must search again
		}
		keep = append(keep, f)
		out = append(out, deferred[i])
	}
	s.found = keep
	return out
}

// IsDiscovered reports whether a tool of this name and schema was loaded.
func (s *Searcher) IsDiscovered(t tool.Tool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.found, found{t.Name(), string(t.InputSchema())})
}

func (s *Searcher) remember(hits []tool.Tool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range hits {
		if !slices.ContainsFunc(s.found, func(f found) bool { return f.name == t.Name() }) {
			s.found = append(s.found, found{t.Name(), string(t.InputSchema())})
		}
	}
}

type searchIn struct {
	Query      string `json:"query"`
	MaxResults int    `json:"max_results,omitempty"`
}

const schema = `{"type":"object","properties":{"query":{"type":"string","description":"Keywords to search the deferred tools' names and descriptions, or \"select:name1,name2\" to load tools by exact name."},"max_results":{"type":"integer","description":"Most tools to return (default 5).","minimum":1}},"required":["query"],"additionalProperties":false}`

const description = "Load deferred tools. Some tools are listed by name only (in a system reminder) and cannot be called until their schemas are loaded: " +
	"search their names and descriptions by keyword, or use \"select:name1,name2\" to load tools by exact name. Loaded tools can be called from the next turn on."

// Tool returns the ToolSearch tool over the tools deferred returns at the time of the call.
func (s *Searcher) Tool(deferred func(context.Context) []tool.Tool) tool.Tool {
	return tool.New(tool.Spec[searchIn]{
		Name:              Name,
		Description:       description,
		Schema:            json.RawMessage(schema),
		IsReadOnly:        tool.Always[searchIn],
		IsConcurrencySafe: tool.Always[searchIn],
		Run: func(ctx context.Context, _ *tool.Env, in searchIn) tool.Result {
			return s.run(deferred(ctx), in)
		},
	})
}

func (s *Searcher) run(tools []tool.Tool, in searchIn) tool.Result {
	max := in.MaxResults
	if max <= 0 {
		max = DefaultMaxResults
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
			return tool.Errorf("no deferred tool called %s; the deferred tools are: %s", strings.Join(missing, ", "), names(tools))
		}
	} else {
		hits = rank(tools, in.Query, max)
	}
	if len(hits) == 0 {
		return tool.Text("No matching deferred tools. The deferred tools are: " + names(tools))
	}
	s.remember(hits)
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

func names(tools []tool.Tool) string {
	if len(tools) == 0 {
		return "(none)"
	}
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name()
	}
	return strings.Join(out, ", ")
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
