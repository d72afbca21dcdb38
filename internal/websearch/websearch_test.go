package websearch

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/provider/connect"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

// serverBackend is a Server over the scripted model on loopback, through the real Anthropic
// adapter.
func serverBackend(t *testing.T, sc *scripted.Scenario) (*Server, *scripted.Server, *[]message.Usage) {
	t.Helper()
	srv, err := scripted.Start(t.Context(), "", sc, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	prov, model, err := connect.Open(connect.Config{BaseURL: srv.URL(), APIKey: "test", Model: "claude-sonnet-4-5",
		Retry: &provider.RetryPolicy{MaxAttempts: 1}}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var usage []message.Usage
	return &Server{Provider: prov, Model: func() string { return model }, Usage: func(_ string, u message.Usage) {
		mu.Lock()
		defer mu.Unlock()
		usage = append(usage, u)
	}}, srv, &usage
}

var results = []scripted.WebResult{
	{Title: "Go 1.18 <released>", URL: "https://go.dev/blog/go1.18", PageAge: "March 15, 2022", Text: "Go 1.18 adds generics & more"},
	{Title: "Other", URL: "https://example.com/x", Text: "other"},
}

func TestServerSearch(t *testing.T) {
	search := scripted.WebSearch("go generics", results...)
	search.Answer = "Go got generics in 1.18."
	s, srv, usage := serverBackend(t, &scripted.Scenario{Rules: []scripted.Rule{{Reply: []scripted.Block{search}}}})
	res, err := s.Search(t.Context(), Query{Query: "go generics", BlockedDomains: []string{"example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	want := &Result{
		Links:  []Link{{Title: "Go 1.18 <released>", URL: "https://go.dev/blog/go1.18", PageAge: "March 15, 2022"}},
		Texts:  []Text{{Text: "Go got generics in 1.18.", Citations: []Citation{{URL: "https://go.dev/blog/go1.18", Title: "Go 1.18 <released>", CitedText: "Go 1.18 adds generics & more"}}}},
		Errors: nil,
	}
	if diff := cmp.Diff(want, res, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Raw" }, cmp.Ignore())); diff != "" {
		t.Errorf("result mismatch (-want +got):\n%s", diff)
	}
	// The raw blocks are the stream's, byte for byte: the non-streaming answer to the same
	// request has the same content blocks.
	body := srv.Requests()[0].Body
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL()+"/v1/messages",
		strings.NewReader(strings.Replace(string(body), `"stream":true`, `"stream":false`, 1)))
	req.Header.Set("x-api-key", "k")
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var msg struct {
		Content []json.RawMessage `json:"content"`
	}
	data, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(data, &msg); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
	var got, wantRaw []string
	for _, r := range res.Raw {
		got = append(got, string(r))
	}
	for _, r := range msg.Content {
		// Ids carry the request number: this was the server's second request.
		wantRaw = append(wantRaw, strings.ReplaceAll(string(r), "scripted_0002_", "scripted_0001_"))
	}
	if diff := cmp.Diff(wantRaw, got); diff != "" {
		t.Errorf("raw blocks mismatch (-want +got):\n%s", diff)
	}
	if !strings.Contains(string(body), `{"type":"web_search_20250305","name":"web_search","max_uses":8,"blocked_domains":["example.com"]}`) {
		t.Errorf("request lacks the server tool:\n%s", body)
	}
	if len(*usage) != 1 || (*usage)[0].OutputTokens == 0 {
		t.Errorf("usage reported: %+v", *usage)
	}
}

func TestServerSearchContinuesAPausedTurn(t *testing.T) {
	first := scripted.WebSearch("qq", results[0])
	second := scripted.WebSearch("qq again", results[1])
	second.Answer = "Both found."
	s, srv, _ := serverBackend(t, &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{Request: 1}, Reply: []scripted.Block{first}, StopReason: "pause_turn"},
		{Reply: []scripted.Block{second}},
	}})
	res, err := s.Search(t.Context(), Query{Query: "qq"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Links) != 2 || len(srv.Requests()) != 2 {
		t.Errorf("links %+v after %d requests; want both searches' results after 2", res.Links, len(srv.Requests()))
	}
	// The paused turn went back as the assistant message, its server blocks as sent.
	if second := string(srv.Requests()[1].Body); !strings.Contains(second, `"type":"web_search_tool_result","tool_use_id":"srvtoolu_scripted_0001_w0"`) {
		t.Errorf("continuation lacks the first turn's result:\n%s", second)
	}
}

func TestServerSearchFails(t *testing.T) {
	fail := scripted.WebSearch("qq")
	fail.SearchError = "too_many_requests"
	s, _, _ := serverBackend(t, &scripted.Scenario{Rules: []scripted.Rule{{Reply: []scripted.Block{fail}}}})
	if _, err := s.Search(t.Context(), Query{Query: "qq"}); err == nil || !strings.Contains(err.Error(), "too_many_requests") {
		t.Errorf("err = %v", err)
	}
}

func TestQueryCheck(t *testing.T) {
	for _, q := range []Query{{Query: "x"}, {Query: "go", AllowedDomains: []string{"a.com"}, BlockedDomains: []string{"b.com"}},
		{Query: "go", AllowedDomains: []string{"https://a.com/"}}} {
		if err := q.Check(); err == nil {
			t.Errorf("%+v accepted", q)
		}
	}
	q := Query{Query: "go", AllowedDomains: []string{"go.dev"}}
	for u, want := range map[string]bool{"https://go.dev/x": true, "https://www.go.dev/": true, "https://pkg.go.dev/": true, "https://notgo.dev/": false} {
		if got := q.Permits(u); got != want {
			t.Errorf("Permits(%s) = %v", u, got)
		}
	}
}

// recorder is a search service on loopback that records the request and answers body.
func recorder(t *testing.T, body string) (*httptest.Server, *http.Request, *string) {
	t.Helper()
	var got http.Request
	var sent string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got, sent = *r.Clone(t.Context()), string(b)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &got, &sent
}

func TestServices(t *testing.T) {
	t.Run("brave", func(t *testing.T) {
		srv, got, _ := recorder(t, `{"web":{"results":[{"title":"A","url":"https://a.dev/1","description":"about a","age":"2 days ago"},{"title":"B","url":"https://b.dev/","description":"b"}]}}`)
		s := &Service{Kind: KindBrave, URL: srv.URL + "/res/v1/web/search", APIKey: "secret", MaxResults: 5}
		res, err := s.Search(t.Context(), Query{Query: "go", AllowedDomains: []string{"a.dev"}})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]Link{{Title: "A", URL: "https://a.dev/1", PageAge: "2 days ago", Snippet: "about a"}}, res.Links); diff != "" {
			t.Errorf("links mismatch (-want +got):\n%s", diff)
		}
		if got.Header.Get("X-Subscription-Token") != "secret" || got.URL.Query().Get("q") != "go (site:a.dev)" || got.URL.Query().Get("count") != "5" {
			t.Errorf("request: %v %v", got.URL, got.Header)
		}
	})
	t.Run("tavily", func(t *testing.T) {
		srv, got, sent := recorder(t, `{"results":[{"title":"T","url":"https://t.dev/","content":"tee","score":0.9}]}`)
		s := &Service{Kind: KindTavily, URL: srv.URL, APIKey: "tvly-key"}
		res, err := s.Search(t.Context(), Query{Query: "go", BlockedDomains: []string{"x.com"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Links) != 1 || res.Links[0].Snippet != "tee" {
			t.Errorf("links = %+v", res.Links)
		}
		if got.Header.Get("Authorization") != "Bearer tvly-key" || *sent != `{"query":"go","max_results":10,"exclude_domains":["x.com"]}` {
			t.Errorf("request: %v %s", got.Header, *sent)
		}
	})
	t.Run("errors", func(t *testing.T) {
		bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"error":"rate limited"}`, http.StatusTooManyRequests)
		}))
		t.Cleanup(bad.Close)
		for _, tt := range []struct {
			s    *Service
			want string
		}{
			{&Service{Kind: KindSearXNG, URL: bad.URL}, `searxng search answered HTTP 429: {"error":"rate limited"}`},
			{&Service{Kind: KindSearXNG}, "needs the URL of a SearXNG instance"},
			{&Service{Kind: KindBrave}, "needs an API key"},
			{&Service{Kind: "bing"}, `search service "bing" is not one of searxng, brave, tavily`},
		} {
			if _, err := tt.s.Search(t.Context(), Query{Query: "go"}); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s: err = %v, want %q", tt.s.Kind, err, tt.want)
			}
		}
	})
}
