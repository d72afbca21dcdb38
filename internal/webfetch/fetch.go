// Package webfetch fetches web pages for the WebFetch tool: HTTPS first, only public
// addresses unless the caller allows more, few redirects and none to another host, size and
// time limits, HTML converted to Markdown (by the keel-web companion), and a short cache of
// what was fetched.
package webfetch

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// Limits and defaults.
const (
	DefaultMaxBytes     = 10 << 20
	DefaultTimeout      = 60 * time.Second
	DefaultMaxRedirects = 10
	DefaultCacheTTL     = 15 * time.Minute
	DefaultCacheBytes   = 50 << 20
	// maxURLLength is what browsers and servers reliably accept.
	maxURLLength = 2000
	// upgradeDialTimeout bounds the HTTPS attempt for an http:// URL, so a host that silently
	// drops port 443 costs seconds before the plain-HTTP fetch, not the whole time budget.
	upgradeDialTimeout = 5 * time.Second
)

// Options configure a Fetcher; the zero value works.
type Options struct {
	// MaxBytes caps a response body; larger responses are refused.
	MaxBytes int64
	// Timeout bounds one fetch, redirects and body included.
	Timeout      time.Duration
	MaxRedirects int
	// TLS is the client TLS configuration; nil uses the system's roots.
	TLS *tls.Config
	// CacheTTL is how long a fetched page is served from the cache; CacheBytes bounds the
	// cache (least recently used pages go first). A negative TTL turns the cache off.
	CacheTTL   time.Duration
	CacheBytes int64
	// Now is the clock of the cache; nil is time.Now.
	Now    func() time.Time
	Logger *slog.Logger
	// Converter turns HTML into Markdown, and text in other charsets than UTF-8 into UTF-8;
	// nil is keel-web ([Companion]) with MaxBytes as its limit.
	Converter Converter
}

// Fetcher fetches pages. It is safe for concurrent use.
type Fetcher struct {
	opts  Options
	cache *cache
}

// New returns a Fetcher.
func New(opts Options) *Fetcher {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxRedirects <= 0 {
		opts.MaxRedirects = DefaultMaxRedirects
	}
	if opts.CacheTTL == 0 {
		opts.CacheTTL = DefaultCacheTTL
	}
	if opts.CacheBytes <= 0 {
		opts.CacheBytes = DefaultCacheBytes
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Converter == nil {
		opts.Converter = &Companion{MaxBytes: opts.MaxBytes}
	}
	return &Fetcher{opts: opts, cache: newCache(opts.CacheTTL, opts.CacheBytes, opts.Now)}
}

// Page is a fetched page.
type Page struct {
	// URL is the address the content came from, after same-host redirects and the HTTPS
	// upgrade.
	URL         string
	Status      int
	ContentType string
	// Bytes is the size of the body as received.
	Bytes int
	// Content is the body as text: HTML converted to Markdown, other text as it came.
	Content string
	// Plain says an http:// URL was fetched over plain HTTP because HTTPS failed.
	Plain bool
	// Cached says the page came from the cache.
	Cached bool
	// Private says the page came from a private address (allowed by the caller).
	Private bool
}

// RedirectError is a redirect to another host, which Fetch reports instead of following: the
// caller decides (and asks permission) for the new host.
type RedirectError struct {
	From, To string
	Status   int
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("%s redirects (HTTP %d) to another host: %s", e.From, e.Status, e.To)
}

// StatusError is an HTTP error status.
type StatusError struct {
	URL    string
	Status int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s answered HTTP %d %s", e.URL, e.Status, http.StatusText(e.Status))
}

// TooLargeError is a body over the size limit.
type TooLargeError struct {
	URL   string
	Size  int64 // the announced size, or -1 when the body simply kept going
	Limit int64
}

func (e *TooLargeError) Error() string {
	if e.Size >= 0 {
		return fmt.Sprintf("%s is %d MB, over the %d MB limit", e.URL, e.Size>>20, e.Limit>>20)
	}
	return fmt.Sprintf("%s is over the %d MB limit", e.URL, e.Limit>>20)
}

// BinaryError is content that is not text.
type BinaryError struct {
	URL, ContentType string
}

func (e *BinaryError) Error() string {
	return fmt.Sprintf("%s is %s, not HTML or text", e.URL, e.ContentType)
}

// ConversionError is a body fetched but not turned into text: keel-web missing, failing or
// stopped. It is not retried over plain HTTP: the page came, and would come the same way.
type ConversionError struct {
	URL string
	Err error
}

func (e *ConversionError) Error() string { return e.URL + ": " + e.Err.Error() }

func (e *ConversionError) Unwrap() error { return e.Err }

// Fetch gets rawURL. An http:// URL is tried over HTTPS first. Connections to private,
// loopback and link-local addresses fail with a *PrivateAddressError unless allowPrivate;
// the check is made on each address dialled. A redirect to another host is returned as a
// *RedirectError.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string, allowPrivate bool) (*Page, error) {
	u, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	key := u.String()
	if p, ok := f.cache.get(key, allowPrivate); ok {
		return p, nil
	}
	ctx, cancel := context.WithTimeout(ctx, f.opts.Timeout)
	defer cancel()
	var page *Page
	if u.Scheme == "http" {
		secure := *u
		secure.Scheme = "https"
		page, err = f.get(ctx, &secure, allowPrivate, upgradeDialTimeout)
		if err != nil && fallsBack(ctx, err) {
			f.opts.Logger.Debug("https upgrade failed; fetching over http", "url", key, "err", err)
			page, err = f.get(ctx, u, allowPrivate, 0)
			if page != nil {
				page.Plain = true
			}
		}
	} else {
		page, err = f.get(ctx, u, allowPrivate, 0)
	}
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded && !errors.Is(err, context.Canceled) {
			return nil, fmt.Errorf("fetch %s: no complete answer within %s", key, f.opts.Timeout)
		}
		return nil, err
	}
	f.cache.put(key, page)
	return page, nil
}

// parseURL accepts absolute http(s) URLs without credentials.
func parseURL(raw string) (*url.URL, error) {
	if len(raw) > maxURLLength {
		return nil, fmt.Errorf("the URL is %d characters long, over the %d accepted", len(raw), maxURLLength)
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, fmt.Errorf("invalid URL %q: %w", raw, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("invalid URL %q: only http and https URLs can be fetched", raw)
	case u.Hostname() == "":
		return nil, fmt.Errorf("invalid URL %q: no host", raw)
	case u.User != nil:
		return nil, fmt.Errorf("invalid URL %q: URLs with a user name or password are not fetched", raw)
	}
	u.Fragment = ""
	return u, nil
}

// fallsBack reports whether a failed HTTPS attempt should be retried over plain HTTP: the
// host did not speak TLS there (refused, reset, not TLS, bad certificate), as opposed to a
// refusal keel made itself or the time running out.
func fallsBack(ctx context.Context, err error) bool {
	var priv *PrivateAddressError
	var redirect *RedirectError
	var status *StatusError
	var large *TooLargeError
	var binary *BinaryError
	var conversion *ConversionError
	switch {
	case ctx.Err() != nil, errors.As(err, &priv), errors.As(err, &redirect), errors.As(err, &status),
		errors.As(err, &large), errors.As(err, &binary), errors.As(err, &conversion):
		return false
	}
	return true
}

// get does one GET of u with its same-host redirects.
func (f *Fetcher) get(ctx context.Context, u *url.URL, allowPrivate bool, dialTimeout time.Duration) (*Page, error) {
	if dialTimeout == 0 {
		dialTimeout = 10 * time.Second
	}
	host := u.Hostname()
	dialer := &net.Dialer{Timeout: dialTimeout}
	if !allowPrivate {
		dialer.Control = guard(host)
	}
	var private atomic.Bool
	transport := &http.Transport{
		// No proxy: the guard must see the address really dialled.
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dialer.DialContext(ctx, network, addr)
			if err == nil && allowPrivate {
				if ap, perr := netipOf(conn.RemoteAddr()); perr == nil && IsPrivate(ap) {
					private.Store(true)
				}
			}
			return conn, err
		},
		TLSClientConfig:       f.tlsConfig(),
		TLSHandshakeTimeout:   dialTimeout,
		ResponseHeaderTimeout: f.opts.Timeout,
		DisableKeepAlives:     true,
		ForceAttemptHTTP2:     true,
	}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, CheckRedirect: f.checkRedirect}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", u, err)
	}
	req.Header.Set("User-Agent", "keel (+https://github.com/keel-dev/keel) WebFetch")
	req.Header.Set("Accept", "text/markdown, text/html;q=0.9, text/plain;q=0.8, */*;q=0.5")
	resp, err := client.Do(req)
	if err != nil {
		var priv *PrivateAddressError
		if errors.As(err, &priv) {
			return nil, priv
		}
		return nil, fmt.Errorf("fetch %s: %w", u, unwrapURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		to, lerr := resp.Location()
		if lerr != nil {
			return nil, fmt.Errorf("fetch %s: HTTP %d redirect without a usable Location", u, resp.StatusCode)
		}
		return nil, &RedirectError{From: resp.Request.URL.String(), To: to.String(), Status: resp.StatusCode}
	}
	page, err := f.read(ctx, resp)
	if page != nil {
		page.Private = private.Load()
	}
	return page, err
}

func (f *Fetcher) tlsConfig() *tls.Config {
	if f.opts.TLS != nil {
		c := f.opts.TLS.Clone()
		if c.MinVersion == 0 {
			c.MinVersion = tls.VersionTLS12
		}
		return c
	}
	return &tls.Config{MinVersion: tls.VersionTLS12}
}

// checkRedirect follows redirects that stay on the same site and stops at the others, whose
// 3xx response [Fetcher.get] turns into a *RedirectError.
func (f *Fetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > f.opts.MaxRedirects {
		return fmt.Errorf("more than %d redirects", f.opts.MaxRedirects)
	}
	if !sameSite(via[len(via)-1].URL, req.URL) {
		return http.ErrUseLastResponse
	}
	return nil
}

// sameSite reports whether a redirect from a to b stays on the same site: the same host (a
// www. prefix added or removed is the same host) and port, over the same scheme or upgraded
// from http to https.
func sameSite(a, b *url.URL) bool {
	strip := func(h string) string { return strings.TrimPrefix(strings.ToLower(h), "www.") }
	if strip(a.Hostname()) != strip(b.Hostname()) {
		return false
	}
	switch {
	case a.Scheme == b.Scheme:
		return a.Port() == b.Port()
	case a.Scheme == "http" && b.Scheme == "https":
		return a.Port() == "" && b.Port() == ""
	}
	return false
}

// unwrapURLError drops the *url.Error wrapper, whose text repeats the method and URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// read takes the body within the size limit and turns it into text.
func (f *Fetcher) read(ctx context.Context, resp *http.Response) (*Page, error) {
	where := resp.Request.URL.String()
	if resp.StatusCode >= 400 {
		return nil, &StatusError{URL: where, Status: resp.StatusCode}
	}
	if resp.ContentLength > f.opts.MaxBytes {
		return nil, &TooLargeError{URL: where, Size: resp.ContentLength, Limit: f.opts.MaxBytes}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.opts.MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", where, err)
	}
	if int64(len(body)) > f.opts.MaxBytes {
		return nil, &TooLargeError{URL: where, Size: -1, Limit: f.opts.MaxBytes}
	}
	content, ctype, err := f.toText(ctx, body, resp.Header.Get("Content-Type"), resp.Request.URL)
	if err != nil {
		var bin *BinaryError
		if errors.As(err, &bin) {
			bin.URL = where
			return nil, err
		}
		return nil, &ConversionError{URL: where, Err: err}
	}
	return &Page{URL: where, Status: resp.StatusCode, ContentType: ctype, Bytes: len(body), Content: content}, nil
}
