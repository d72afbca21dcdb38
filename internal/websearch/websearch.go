// Package websearch runs the searches of the WebSearch tool: through the model provider's own
// server-side search (Anthropic's web_search tool) when it has one, or through a search
// service named in settings (a SearXNG instance, the Brave Search API, Tavily).
package websearch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Query is one search.
type Query struct {
	Query string
	// AllowedDomains keeps only results from these domains (and their subdomains);
	// BlockedDomains drops results from them. At most one of them is set.
	AllowedDomains []string
	BlockedDomains []string
}

// Result is what a search found.
type Result struct {
	// Links are the results, in the order the search gave them.
	Links []Link
	// Texts are what the searching model wrote about them, with the sources each part cites
	// (server-side search), or nothing (a search service).
	Texts []Text
	// Raw holds the provider's content blocks as it sent them (server-side search), for
	// hooks and logs.
	Raw []json.RawMessage
	// Errors are the error codes of searches that failed (max_uses_exceeded, …).
	Errors []string
}

// Link is one search result. The strings are the search's own, unchanged.
type Link struct {
	Title   string `json:"title"`
	URL     string `json:"url"`
	PageAge string `json:"page_age,omitempty"`
	// Snippet is the text the search service showed for it (not sent by server-side search,
	// whose page content is encrypted).
	Snippet string `json:"snippet,omitempty"`
}

// Text is a passage the searching model wrote, and the results it cites.
type Text struct {
	Text      string
	Citations []Citation
}

// Citation points a passage at a result.
type Citation struct {
	URL       string `json:"url"`
	Title     string `json:"title"`
	CitedText string `json:"cited_text"`
}

// Backend runs searches. Implementations are safe for concurrent use.
type Backend interface {
	// Name says which backend this is ("anthropic", "searxng", …), for messages.
	Name() string
	Search(ctx context.Context, q Query) (*Result, error)
}

// Check refuses a query the searches cannot run: too short, or with both domain lists.
func (q Query) Check() error {
	switch {
	case len(strings.TrimSpace(q.Query)) < 2:
		return fmt.Errorf("query must be at least 2 characters")
	case len(q.AllowedDomains) > 0 && len(q.BlockedDomains) > 0:
		return fmt.Errorf("give allowed_domains or blocked_domains, not both")
	}
	for _, d := range slices.Concat(q.AllowedDomains, q.BlockedDomains) {
		if d == "" || strings.Contains(d, "/") {
			return fmt.Errorf("domain %q must be a bare domain such as example.com, without a scheme or path", d)
		}
	}
	return nil
}

// Permits reports whether a result URL passes the query's domain lists: a domain covers
// itself and its subdomains; a www. prefix is ignored.
func (q Query) Permits(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	host := strings.TrimPrefix(strings.ToLower(u.Hostname()), "www.")
	covers := func(d string) bool {
		d = strings.TrimPrefix(strings.ToLower(d), "www.")
		return host == d || strings.HasSuffix(host, "."+d)
	}
	if len(q.AllowedDomains) > 0 && !slices.ContainsFunc(q.AllowedDomains, covers) {
		return false
	}
	return !slices.ContainsFunc(q.BlockedDomains, covers)
}
