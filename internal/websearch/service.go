package websearch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The search services a Service can talk to.
const (
	KindSearXNG = "searxng"
	KindBrave   = "brave"
	KindTavily  = "tavily"
)

// Kinds lists the search services, for settings validation.
var Kinds = []string{KindSearXNG, KindBrave, KindTavily}

// Default endpoints of the hosted services.
const (
	braveURL  = "https://api.search.brave.com/res/v1/web/search"
	tavilyURL = "https://api.tavily.com/search"
)

// Service searches through a search service's HTTP API: a SearXNG instance's JSON output,
// the Brave Search API or Tavily. Domain lists are sent where the service understands them
// and always applied to the results.
type Service struct {
	Kind string
	// URL is the endpoint: a SearXNG instance (its base URL or its /search URL); for Brave
	// and Tavily empty means the public API.
	URL string
	// APIKey is the Brave or Tavily key.
	APIKey string
	// MaxResults bounds the results returned; 0 means 10.
	MaxResults int
	// Client is the HTTP client; nil means one with a 30 s timeout.
	Client *http.Client
}

var _ Backend = (*Service)(nil)

// Name implements Backend.
func (s *Service) Name() string { return s.Kind }

// maxServiceBody bounds a search service's answer.
const maxServiceBody = 4 << 20

// Search implements Backend.
func (s *Service) Search(ctx context.Context, q Query) (*Result, error) {
	if err := q.Check(); err != nil {
		return nil, err
	}
	req, err := s.request(ctx, q)
	if err != nil {
		return nil, err
	}
	client := s.Client
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s search: %w", s.Kind, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxServiceBody))
	if err != nil {
		return nil, fmt.Errorf("%s search: read the answer: %w", s.Kind, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s search answered HTTP %d: %s", s.Kind, resp.StatusCode, snippet(body))
	}
	links, err := s.parse(body)
	if err != nil {
		return nil, fmt.Errorf("%s search: %w", s.Kind, err)
	}
	res := &Result{}
	for _, l := range links {
		if q.Permits(l.URL) && len(res.Links) < s.max() {
			res.Links = append(res.Links, l)
		}
	}
	return res, nil
}

func (s *Service) max() int {
	if s.MaxResults > 0 {
		return s.MaxResults
	}
	return 10
}

func (s *Service) request(ctx context.Context, q Query) (*http.Request, error) {
	switch s.Kind {
	case KindSearXNG:
		if s.URL == "" {
			return nil, fmt.Errorf("searxng search needs the URL of a SearXNG instance (webSearch.url)")
		}
		u, err := url.Parse(s.URL)
		if err != nil {
			return nil, fmt.Errorf("searxng URL %q: %w", s.URL, err)
		}
		if !strings.HasSuffix(u.Path, "/search") {
			u.Path = strings.TrimSuffix(u.Path, "/") + "/search"
		}
		v := u.Query()
		v.Set("q", withSites(q))
		v.Set("format", "json")
		u.RawQuery = v.Encode()
		return http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	case KindBrave:
		if s.APIKey == "" {
			return nil, fmt.Errorf("brave search needs an API key (webSearch.apiKey)")
		}
		u, err := url.Parse(orDefault(s.URL, braveURL))
		if err != nil {
			return nil, fmt.Errorf("brave URL %q: %w", s.URL, err)
		}
		v := u.Query()
		v.Set("q", withSites(q))
		v.Set("count", strconv.Itoa(min(s.max(), 20)))
		u.RawQuery = v.Encode()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "application/json")
		req.Header.Set("X-Subscription-Token", s.APIKey)
		return req, nil
	case KindTavily:
		if s.APIKey == "" {
			return nil, fmt.Errorf("tavily search needs an API key (webSearch.apiKey)")
		}
		body, _ := json.Marshal(struct {
			Query          string   `json:"query"`
			MaxResults     int      `json:"max_results"`
			IncludeDomains []string `json:"include_domains,omitempty"`
			ExcludeDomains []string `json:"exclude_domains,omitempty"`
		}{q.Query, s.max(), q.AllowedDomains, q.BlockedDomains})
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, orDefault(s.URL, tavilyURL), bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+s.APIKey)
		return req, nil
	}
	return nil, fmt.Errorf("search service %q is not one of %s", s.Kind, strings.Join(Kinds, ", "))
}

// parse reads the results of each service's JSON.
func (s *Service) parse(body []byte) ([]Link, error) {
	type result struct {
		Title       string `json:"title"`
		URL         string `json:"url"`
		Content     string `json:"content"`
		Description string `json:"description"`
		Age         string `json:"age"`
		Published   string `json:"publishedDate"`
	}
	var out struct {
		Results []result `json:"results"`
		Web     struct {
			Results []result `json:"results"`
		} `json:"web"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("the answer is not the JSON expected: %v (%s)", err, snippet(body))
	}
	results := out.Results
	if s.Kind == KindBrave {
		results = out.Web.Results
	}
	links := make([]Link, 0, len(results))
	for _, r := range results {
		if r.URL == "" {
			continue
		}
		links = append(links, Link{Title: r.Title, URL: r.URL, PageAge: orDefault(r.Age, r.Published),
			Snippet: orDefault(r.Content, r.Description)})
	}
	return links, nil
}

// withSites adds site: operators for the domain lists, which SearXNG's engines and Brave
// understand, so results are not spent on domains filtered out afterwards.
func withSites(q Query) string {
	var parts []string
	for _, d := range q.AllowedDomains {
		parts = append(parts, "site:"+d)
	}
	out := q.Query
	if len(parts) > 0 {
		out += " (" + strings.Join(parts, " OR ") + ")"
	}
	for _, d := range q.BlockedDomains {
		out += " -site:" + d
	}
	return out
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// snippet is the start of a body, for error messages.
func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
