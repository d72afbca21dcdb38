package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/websearch"
)

type webSearchInput struct {
	Query          string   `json:"query"`
	AllowedDomains []string `json:"allowed_domains,omitempty"`
	BlockedDomains []string `json:"blocked_domains,omitempty"`
}

const webSearchSchema = `{"type":"object","properties":{
"query":{"type":"string","minLength":2,"description":"The search query"},
"allowed_domains":{"type":"array","items":{"type":"string"},"description":"Only return results from these domains"},
"blocked_domains":{"type":"array","items":{"type":"string"},"description":"Never return results from these domains"}},
"required":["query"],"additionalProperties":false}`

// WebSearchOff is the answer when no search backend is configured.
const WebSearchOff = `WebSearch is off: this model provider has no server-side web search and no search service is configured. The user can name one in settings, e.g. {"webSearch": {"backend": "searxng", "url": "http://127.0.0.1:8888"}} or {"webSearch": {"backend": "brave", "apiKey": "${BRAVE_API_KEY}"}} (backends: anthropic, searxng, brave, tavily).`

// WebSearch returns the WebSearch tool over backend; a nil backend answers every call with
// [WebSearchOff]. The results' titles, URLs and the cited passages reach the model as the
// search gave them. Read-only and concurrency-safe; deferred.
func WebSearch(backend websearch.Backend) tool.Tool {
	return deferred{tool.New(tool.Spec[webSearchInput]{
		Name:              "WebSearch",
		Description:       description("WebSearch"),
		Schema:            []byte(webSearchSchema),
		IsReadOnly:        tool.Always[webSearchInput],
		IsConcurrencySafe: tool.Always[webSearchInput],
		Run: func(ctx context.Context, env *tool.Env, in webSearchInput) tool.Result {
			if backend == nil {
				return tool.Errorf("%s", WebSearchOff)
			}
			started := time.Now()
			q := websearch.Query{Query: in.Query, AllowedDomains: in.AllowedDomains, BlockedDomains: in.BlockedDomains}
			if err := q.Check(); err != nil {
				return tool.Errorf("%v.", err)
			}
			env.Progress("searching: " + in.Query)
			res, err := backend.Search(ctx, q)
			if err != nil {
				return tool.Errorf("Web search for %q (%s) failed: %v", in.Query, backend.Name(), err)
			}
			return tool.Result{
				Content: tool.Text(formatSearch(in.Query, res)).Content,
				Output: map[string]any{"query": in.Query, "results": res.Links, "blocks": res.Raw,
					"backend": backend.Name(), "durationSeconds": time.Since(started).Seconds()},
			}
		},
	})}
}

// formatSearch renders a result for the model: the links as JSON, then what the searching
// model wrote with its sources, then a reminder to cite.
func formatSearch(query string, res *websearch.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Web search results for query: %q\n\n", query)
	if len(res.Links) == 0 {
		b.WriteString("No results found.\n")
	} else {
		type link struct {
			Title   string `json:"title"`
			URL     string `json:"url"`
			PageAge string `json:"page_age,omitempty"`
		}
		links := make([]link, len(res.Links))
		for i, l := range res.Links {
			links[i] = link{l.Title, l.URL, l.PageAge}
		}
		fmt.Fprintf(&b, "Links: %s\n", compactJSON(links))
		for _, l := range res.Links {
			if l.Snippet != "" {
				fmt.Fprintf(&b, "\n[%s](%s)\n%s\n", l.Title, l.URL, strings.TrimSpace(l.Snippet))
			}
		}
	}
	for _, t := range res.Texts {
		if text := strings.TrimSpace(t.Text); text != "" {
			b.WriteString("\n" + text + "\n")
		}
		for _, c := range t.Citations {
			fmt.Fprintf(&b, "  cited: [%s](%s) %s\n", c.Title, c.URL, compactJSON(c.CitedText))
		}
	}
	if len(res.Errors) > 0 {
		fmt.Fprintf(&b, "\n(Some searches failed: %s.)\n", strings.Join(res.Errors, ", "))
	}
	b.WriteString("\nREMINDER: cite the sources you use in your answer, as Markdown links.")
	return b.String()
}

// compactJSON encodes v without HTML escaping, so titles and URLs keep their characters.
func compactJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSpace(buf.String())
}
