package webfetch

import (
	"bytes"
	"context"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Converter turns fetched bodies into UTF-8 text. keel's is the keel-web companion
// ([Companion]); tests convert in process (htmltext.InProcess).
type Converter interface {
	// Markdown converts an HTML body, decoded by the Content-Type header, a <meta>
	// declaration or a byte-order mark, to Markdown with links made absolute against base.
	Markdown(ctx context.Context, body []byte, header string, base *url.URL) (string, error)
	// Decode converts text in a charset other than UTF-8 to UTF-8.
	Decode(ctx context.Context, body []byte, header string) (string, error)
}

// toText turns a body into text by its content type: HTML becomes Markdown (links made
// absolute against the page's URL), other text is decoded to UTF-8 as it is, anything else is
// a *BinaryError. A missing or generic type is sniffed.
func (f *Fetcher) toText(ctx context.Context, body []byte, header string, base *url.URL) (content, ctype string, err error) {
	ctype, params, perr := mime.ParseMediaType(header)
	if perr != nil || ctype == "" || ctype == "application/octet-stream" {
		ctype, params, _ = mime.ParseMediaType(http.DetectContentType(body))
	}
	switch {
	case ctype == "text/html" || ctype == "application/xhtml+xml":
		md, err := f.opts.Converter.Markdown(ctx, body, header, base)
		return md, ctype, err
	case isText(ctype):
		if bytes.IndexByte(body, 0) >= 0 && params["charset"] == "" {
			return "", ctype, &BinaryError{ContentType: ctype + " with binary bytes"}
		}
		if text, ok := utf8Text(body, header); ok {
			return text, ctype, nil
		}
		text, err := f.opts.Converter.Decode(ctx, body, header)
		return text, ctype, err
	}
	return "", ctype, &BinaryError{ContentType: ctype}
}

func isText(ctype string) bool {
	switch {
	case strings.HasPrefix(ctype, "text/"),
		strings.HasSuffix(ctype, "+json"), strings.HasSuffix(ctype, "+xml"):
		return true
	}
	switch ctype {
	case "application/json", "application/xml", "application/javascript", "application/ecmascript",
		"application/x-javascript", "application/yaml", "application/x-yaml", "application/toml",
		"application/x-sh", "application/sql", "application/graphql", "application/x-ndjson":
		return true
	}
	return false
}

// utf8Text decodes text that needs no charset table, so that most text never starts
// keel-web: text with a UTF-8 byte-order mark, declared UTF-8, or declaring no charset and
// valid UTF-8 throughout, with what is not UTF-8 replaced. A UTF-16 byte-order mark, another
// charset, or undeclared bytes that are not UTF-8 (windows-1252, as browsers guess) are not.
func utf8Text(body []byte, header string) (string, bool) {
	switch {
	case bytes.HasPrefix(body, []byte("\xef\xbb\xbf")):
		return strings.ToValidUTF8(string(body), "\uFFFD"), true
	case bytes.HasPrefix(body, []byte("\xfe\xff")), bytes.HasPrefix(body, []byte("\xff\xfe")):
		return "", false
	}
	if _, params, err := mime.ParseMediaType(header); err == nil && params["charset"] != "" {
		if !isUTF8Label(params["charset"]) {
			return "", false
		}
		return strings.ToValidUTF8(string(body), "\uFFFD"), true
	}
	if !utf8.Valid(body) {
		return "", false
	}
	return string(body), true
}

// isUTF8Label reports whether label names UTF-8 in the WHATWG Encoding Standard, which
// browsers (and keel-web) follow.
func isUTF8Label(label string) bool {
	switch strings.ToLower(strings.TrimSpace(label)) {
	case "utf-8", "utf8", "unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "x-unicode20utf8":
		return true
	}
	return false
}

func netipOf(a net.Addr) (netip.Addr, error) {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}, err
	}
	return ap.Addr(), nil
}
