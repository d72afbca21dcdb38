package webfetch

import (
	"bytes"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"unicode/utf8"

	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"golang.org/x/net/html/charset"
)

// toText turns a body into text by its content type: HTML becomes Markdown (links made
// absolute against the page's URL), other text is decoded to UTF-8 as it is, anything else is
// a *BinaryError. A missing or generic type is sniffed.
func toText(body []byte, header string, base *url.URL) (content, ctype string, err error) {
	ctype, params, perr := mime.ParseMediaType(header)
	if perr != nil || ctype == "" || ctype == "application/octet-stream" {
		ctype, params, _ = mime.ParseMediaType(http.DetectContentType(body))
	}
	switch {
	case ctype == "text/html" || ctype == "application/xhtml+xml":
		utf8Body, err := decode(body, header)
		if err != nil {
			return "", ctype, err
		}
		md, err := htmltomarkdown.ConvertString(utf8Body, converter.WithDomain(base.Scheme+"://"+base.Host))
		if err != nil {
			return "", ctype, fmt.Errorf("convert the HTML of %s to Markdown: %w", base, err)
		}
		return md, ctype, nil
	case isText(ctype):
		if bytes.IndexByte(body, 0) >= 0 && params["charset"] == "" {
			return "", ctype, &BinaryError{ContentType: ctype + " with binary bytes"}
		}
		text, err := decode(body, header)
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

// decode converts body to UTF-8 using the charset of the header, the HTML's own <meta>
// declaration or a byte-order mark, and replaces what is still not valid UTF-8.
func decode(body []byte, header string) (string, error) {
	r, err := charset.NewReader(bytes.NewReader(body), header)
	if err != nil {
		return strings.ToValidUTF8(string(body), "\uFFFD"), nil
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(r); err != nil {
		return "", fmt.Errorf("decode the text: %w", err)
	}
	s := b.String()
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s, nil
}

func netipOf(a net.Addr) (netip.Addr, error) {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}, err
	}
	return ap.Addr(), nil
}
