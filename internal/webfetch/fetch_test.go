package webfetch

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/keel-dev/keel/internal/waittest"
	"github.com/keel-dev/keel/internal/webfetch/htmltext"
)

// newFetcher is New converting in this process; companion_test.go runs keel-web itself.
func newFetcher(opts Options) *Fetcher {
	if opts.Converter == nil {
		opts.Converter = htmltext.InProcess{}
	}
	return New(opts)
}

// site is a local web server with the pages the tests fetch.
type site struct {
	srv  *httptest.Server
	hits atomic.Int32
	// block is closed when the test ends, releasing handlers that never finish on their own.
	block chan struct{}
}

func newSite(t *testing.T, secure bool) *site {
	t.Helper()
	s := &site{block: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><head><title>T</title><style>p{color:red}</style><script>alert(1)</script></head>
<body><h1>Hello</h1><p>Some <b>bold</b> text and <a href="/other">a link</a>.</p><ul><li>one</li><li>two</li></ul></body></html>`)
	})
	// Pages that are only a content type and a body.
	for path, page := range map[string]struct{ contentType, body string }{
		"/latin1":     {"text/html; charset=iso-8859-1", "<p>caf\xe9</p>"},
		"/latin1.txt": {"text/plain; charset=iso-8859-1", "na\xefve"},
		"/sjis":       {"text/html; charset=shift_jis", "<p>\x93\xfa\x96\x7b</p>"},
		"/sjis.txt":   {"text/plain; charset=shift_jis", "\x93\xfa\x96\x7b"},
		"/text":       {"application/json", `{"ok": true}`},
		"/png":        {"image/png", "\x89PNG\r\n\x1a\n\x00\x00"},
		"/octets":     {"application/octet-stream", "\x00\x01\x02\x03ELF"},
	} {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", page.contentType)
			w.Write([]byte(page.body))
		})
	}
	mux.HandleFunc("/missing", http.NotFound)
	mux.HandleFunc("/hop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/page", http.StatusFound) })
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		// The same server under another name is another host.
		_, port, _ := net.SplitHostPort(r.Host)
		http.Redirect(w, r, "http://localhost:"+port+"/page", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/huge", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", "10737418240") // 10 GB announced
		w.WriteHeader(http.StatusOK)
		w.Write([]byte("start"))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-s.block:
		}
	})
	mux.HandleFunc("/endless", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		chunk := []byte(strings.Repeat("x", 64<<10))
		for range 1 << 12 { // bounded: 256 MB at most, far past any limit
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte("first bytes"))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-s.block:
		}
	})
	s.srv = httptest.NewUnstartedServer(mux)
	// Handshakes the tests make fail on purpose would otherwise be logged.
	s.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	if secure {
		s.srv.StartTLS()
	} else {
		s.srv.Start()
	}
	t.Cleanup(func() {
		close(s.block)
		s.srv.Close()
	})
	return s
}

func (s *site) url(path string) string { return s.srv.URL + path }

func trusting(s *site) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(s.srv.Certificate())
	return &tls.Config{RootCAs: pool}
}

// pageCase is a page of the test site and what its text must and must not hold.
type pageCase struct {
	path     string
	contains []string
	lacks    []string
}

// fetch fetches the page with f and checks its text.
func (c pageCase) fetch(t *testing.T, f *Fetcher, s *site) *Page {
	t.Helper()
	p, err := f.Fetch(t.Context(), s.url(c.path), true)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range c.contains {
		if !strings.Contains(p.Content, want) {
			t.Errorf("content lacks %q:\n%s", want, p.Content)
		}
	}
	for _, not := range c.lacks {
		if strings.Contains(p.Content, not) {
			t.Errorf("content has %q:\n%s", not, p.Content)
		}
	}
	return p
}

func TestFetchPages(t *testing.T) {
	s := newSite(t, false)
	f := newFetcher(Options{CacheTTL: -1})
	tests := []pageCase{
		{"/page", []string{"# Hello", "**bold**", "[a link](" + s.srv.URL + "/other)", "- one"}, []string{"alert", "color:red"}},
		{"/latin1", []string{"café"}, nil},
		{"/latin1.txt", []string{"naïve"}, nil},
		{"/sjis", []string{"日本"}, nil},
		{"/sjis.txt", []string{"日本"}, nil},
		{"/text", []string{`{"ok": true}`}, nil},
		{"/hop", []string{"# Hello"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			p := tt.fetch(t, f, s)
			if !p.Plain || !p.Private {
				t.Errorf("Plain=%v Private=%v, want both: an http URL of a plain server on loopback", p.Plain, p.Private)
			}
		})
	}
}

func TestFetchRefusesPrivateAddresses(t *testing.T) {
	s := newSite(t, false)
	f := newFetcher(Options{CacheTTL: -1})
	_, port, _ := net.SplitHostPort(s.srv.Listener.Addr().String())
	for _, u := range []string{s.url("/page"), "http://localhost:" + port + "/page", "http://[::1]:" + port + "/page"} {
		_, err := f.Fetch(t.Context(), u, false)
		var priv *PrivateAddressError
		if !errors.As(err, &priv) {
			t.Errorf("%s: err = %v, want a PrivateAddressError", u, err)
		}
	}
	if n := s.hits.Load(); n != 0 {
		t.Errorf("the server saw %d requests; a refused fetch must not connect", n)
	}
}

func TestIsPrivate(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1": true, "10.1.2.3": true, "172.16.0.1": true, "192.168.1.1": true, "169.254.169.254": true,
		"0.0.0.0": true, "100.64.0.1": true, "::1": true, "fe80::1": true, "fc00::1": true, "::ffff:127.0.0.1": true,
		"64:ff9b::a00:1": true, "224.0.0.1": true,
		"93.184.216.34": false, "2606:4700::1111": false, "8.8.8.8": false,
	} {
		if got := IsPrivate(netip.MustParseAddr(addr)); got != want {
			t.Errorf("IsPrivate(%s) = %v, want %v", addr, got, want)
		}
	}
}

func TestFetchRedirects(t *testing.T) {
	s := newSite(t, false)
	f := newFetcher(Options{CacheTTL: -1, MaxRedirects: 3})
	_, err := f.Fetch(t.Context(), s.url("/away"), true)
	var re *RedirectError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want a RedirectError", err)
	}
	_, port, _ := net.SplitHostPort(s.srv.Listener.Addr().String())
	if re.To != "http://localhost:"+port+"/page" || re.Status != http.StatusMovedPermanently {
		t.Errorf("redirect = %+v", re)
	}
	if _, err := f.Fetch(t.Context(), s.url("/loop"), true); err == nil || !strings.Contains(err.Error(), "more than 3 redirects") {
		t.Errorf("redirect loop: err = %v", err)
	}
}

func TestFetchSameSite(t *testing.T) {
	parse := func(s string) *url.URL { u, _ := parseURL(s); return u }
	tests := []struct {
		a, b string
		want bool
	}{
		{"https://example.com/a", "https://example.com/b", true},
		{"https://example.com/a", "https://www.example.com/b", true},
		{"http://example.com/a", "https://example.com/b", true},
		{"https://example.com/a", "http://example.com/b", false},
		{"https://example.com/a", "https://example.org/b", false},
		{"https://example.com:8443/a", "https://example.com/b", false},
	}
	for _, tt := range tests {
		if got := sameSite(parse(tt.a), parse(tt.b)); got != tt.want {
			t.Errorf("sameSite(%s, %s) = %v", tt.a, tt.b, got)
		}
	}
}

func TestFetchLimitsAndBadInput(t *testing.T) {
	s := newSite(t, false)
	timeout := waittest.Scale(2 * time.Second) // what is not slow answers within it, loaded or not
	f := newFetcher(Options{CacheTTL: -1, MaxBytes: 1 << 20, Timeout: timeout})
	tests := []struct {
		url  string
		want string
	}{
		{s.url("/huge"), "is 10240 MB, over the 1 MB limit"},
		{s.url("/endless"), "over the 1 MB limit"},
		{s.url("/slow"), "no complete answer within " + timeout.String()},
		{s.url("/png"), "is image/png, not HTML or text"},
		{s.url("/octets"), "not HTML or text"},
		{s.url("/missing"), "answered HTTP 404 Not Found"},
		{"ftp://example.com/x", "only http and https"},
		{"https://user:pw@example.com/", "user name or password"},
		{"not a url", "only http and https"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			_, err := f.Fetch(t.Context(), tt.url, true)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to say %q", err, tt.want)
			}
		})
	}
}

func TestFetchUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = newFetcher(Options{CacheTTL: -1}).Fetch(t.Context(), "https://"+addr+"/", true)
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("err = %v, want connection refused", err)
	}
}

func TestFetchHTTPS(t *testing.T) {
	s := newSite(t, true)
	t.Run("upgrade", func(t *testing.T) {
		f := newFetcher(Options{CacheTTL: -1, TLS: trusting(s)})
		plainURL := strings.Replace(s.url("/page"), "https://", "http://", 1)
		p, err := f.Fetch(t.Context(), plainURL, true)
		if err != nil {
			t.Fatal(err)
		}
		if p.Plain || !strings.HasPrefix(p.URL, "https://") {
			t.Errorf("fetched %s (plain=%v); want the https upgrade", p.URL, p.Plain)
		}
	})
	t.Run("untrusted certificate", func(t *testing.T) {
		_, err := newFetcher(Options{CacheTTL: -1}).Fetch(t.Context(), s.url("/page"), true)
		if err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("err = %v, want a certificate error", err)
		}
	})
}

func TestFetchCache(t *testing.T) {
	s := newSite(t, false)
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	f := newFetcher(Options{Now: clock})
	var cached []bool
	for range 2 {
		p, err := f.Fetch(t.Context(), s.url("/page"), true)
		if err != nil {
			t.Fatal(err)
		}
		cached = append(cached, p.Cached)
	}
	if _, err := f.Fetch(t.Context(), s.url("/page"), false); err == nil {
		t.Error("a page from a private address was served from the cache to a caller not allowed to reach it")
	}
	mu.Lock()
	now = now.Add(DefaultCacheTTL)
	mu.Unlock()
	p, err := f.Fetch(t.Context(), s.url("/page"), true)
	if err != nil {
		t.Fatal(err)
	}
	cached = append(cached, p.Cached)
	if diff := cmp.Diff([]bool{false, true, false}, cached); diff != "" {
		t.Errorf("cached mismatch (-want +got):\n%s", diff)
	}
	if n := s.hits.Load(); n != 2 {
		t.Errorf("server hits = %d, want 2 (one fetch cached)", n)
	}
}
