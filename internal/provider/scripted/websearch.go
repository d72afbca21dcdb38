package scripted

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// KindWebSearch is a search by the Messages API's web_search server tool: it is answered as a
// server_tool_use block, a web_search_tool_result holding the results, and — when the block
// has an Answer — a text block citing them. The request must carry a web_search tool, whose
// allowed_domains, blocked_domains and max_uses the answer honours as the API does. Chat
// completions have no server web search and leave it out.
const KindWebSearch BlockKind = "web_search"

// WebResult is one result of a scripted web search.
type WebResult struct {
	Title, URL, PageAge string
	// Text is the passage a citation of this result quotes (cited_text).
	Text string
}

// WebSearch returns a server-side web search for query finding results. Set Answer on the
// block for a text block citing them, or SearchError for a failed search (an error_code such
// as max_uses_exceeded or unavailable).
func WebSearch(query string, results ...WebResult) Block {
	return Block{Kind: KindWebSearch, Text: query, Results: results}
}

// webSearchTypes are the versions of the server tool the API accepts.
var webSearchTypes = []string{"web_search_20250305", "web_search_20260209"}

// webSearchFields are the fields a web_search tool definition may have.
var webSearchFields = []string{"type", "name", "max_uses", "allowed_domains", "blocked_domains", "user_location",
	"cache_control", "defer_loading", "strict", "allowed_callers"}

// webSearchTool is the request's web_search definition.
type webSearchTool struct {
	MaxUses        *int     `json:"max_uses"`
	AllowedDomains []string `json:"allowed_domains"`
	BlockedDomains []string `json:"blocked_domains"`
}

// parseWebSearchTool checks a web_search tool definition the way the API does.
func parseWebSearchTool(tag string, raw json.RawMessage, typ, name string) (*webSearchTool, error) {
	if !slices.Contains(webSearchTypes, typ) {
		return nil, badRequest("%s.type: Input tag '%s' is not a known server tool type (want one of %s)", tag, typ, joinValid(webSearchTypes))
	}
	if name != "web_search" {
		return nil, badRequest("%s.name: Input should be 'web_search'", tag)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, badRequest("%s: %v", tag, err)
	}
	for k := range fields {
		if !slices.Contains(webSearchFields, k) {
			return nil, badRequest("%s.%s: Extra inputs are not permitted", tag, k)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	var def webSearchTool
	if err := dec.Decode(&def); err != nil {
		return nil, badRequest("%s: %v", tag, err)
	}
	switch {
	case def.MaxUses != nil && *def.MaxUses < 1:
		return nil, badRequest("%s.max_uses: Input should be greater than 0", tag)
	case len(def.AllowedDomains) > 0 && len(def.BlockedDomains) > 0:
		return nil, badRequest("%s: Only one of allowed_domains and blocked_domains may be given", tag)
	}
	for _, d := range slices.Concat(def.AllowedDomains, def.BlockedDomains) {
		if d == "" || strings.Contains(d, "://") {
			return nil, badRequest("%s: domain %q must be a bare domain without a scheme", tag, d)
		}
	}
	return &def, nil
}

// permits reports whether a result's URL passes the definition's domain filters: a domain
// covers itself and its subdomains.
func (t *webSearchTool) permits(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	covers := func(d string) bool {
		d = strings.ToLower(strings.TrimPrefix(d, "www."))
		h := strings.TrimPrefix(host, "www.")
		return h == d || strings.HasSuffix(h, "."+d)
	}
	if len(t.AllowedDomains) > 0 && !slices.ContainsFunc(t.AllowedDomains, covers) {
		return false
	}
	return !slices.ContainsFunc(t.BlockedDomains, covers)
}

// Kinds of the wire blocks a web search becomes.
const (
	kindWebResult BlockKind = "web_search_tool_result"
	kindCitedText BlockKind = "cited_text"
)

// webSearchBlocks expands a web_search reply block into its wire blocks; uses counts the
// searches of the reply so far, for max_uses.
func webSearchBlocks(n int, b Block, def *webSearchTool, uses int) ([]replyBlock, error) {
	if def == nil {
		return nil, fmt.Errorf("the scenario answers with a web_search, but the request has no web_search tool")
	}
	input, _ := json.Marshal(map[string]string{"query": b.Text})
	id := fmt.Sprintf("srvtoolu_scripted_%04d_w%d", n, uses)
	use := replyBlock{kind: kindServerUse, id: id, name: "web_search", input: input}
	res := replyBlock{kind: kindWebResult, id: id, searchError: b.SearchError}
	if def.MaxUses != nil && uses >= *def.MaxUses {
		res.searchError = "max_uses_exceeded"
	}
	if res.searchError == "" {
		for _, r := range b.Results {
			if def.permits(r.URL) {
				res.results = append(res.results, r)
			}
		}
	}
	out := []replyBlock{use, res}
	if b.Answer != "" {
		out = append(out, replyBlock{kind: kindCitedText, text: b.Answer, results: res.results})
	}
	return out, nil
}

type webResultWire struct {
	Type             string  `json:"type"`
	Title            string  `json:"title"`
	URL              string  `json:"url"`
	EncryptedContent string  `json:"encrypted_content"`
	PageAge          *string `json:"page_age"`
}

type webSearchResultBlock struct {
	Type      string `json:"type"`
	ToolUseID string `json:"tool_use_id"`
	Content   any    `json:"content"`
	Caller    struct {
		Type string `json:"type"`
	} `json:"caller"`
}

type webSearchError struct {
	Type      string `json:"type"`
	ErrorCode string `json:"error_code"`
}

type citation struct {
	Type           string `json:"type"`
	CitedText      string `json:"cited_text"`
	URL            string `json:"url"`
	Title          string `json:"title"`
	EncryptedIndex string `json:"encrypted_index"`
}

type citedTextBlock struct {
	Type      string     `json:"type"`
	Text      string     `json:"text"`
	Citations []citation `json:"citations"`
}

// webResultWireBlock is the web_search_tool_result as the API shows it; it arrives whole in
// its content_block_start.
func webResultWireBlock(b replyBlock) any {
	r := webSearchResultBlock{Type: "web_search_tool_result", ToolUseID: b.id}
	r.Caller.Type = "direct"
	if b.searchError != "" {
		r.Content = webSearchError{Type: "web_search_tool_result_error", ErrorCode: b.searchError}
		return r
	}
	results := []webResultWire{}
	for _, w := range b.results {
		var age *string
		if w.PageAge != "" {
			age = &w.PageAge
		}
		results = append(results, webResultWire{Type: "web_search_result", Title: w.Title, URL: w.URL,
			EncryptedContent: base64.StdEncoding.EncodeToString([]byte("scripted page: " + w.URL)), PageAge: age})
	}
	r.Content = results
	return r
}

// citationsOf cites every result of the search the text answers.
func citationsOf(b replyBlock) []citation {
	out := []citation{}
	for _, w := range b.results {
		out = append(out, citation{Type: "web_search_result_location", CitedText: w.Text, URL: w.URL, Title: w.Title,
			EncryptedIndex: base64.StdEncoding.EncodeToString([]byte("scripted index: " + w.URL))})
	}
	return out
}
