// Package htmltext turns a fetched web page into text for WebFetch: HTML into Markdown with
// its links made absolute, text in any charset a browser knows into UTF-8. It links the HTML
// parser, the HTML → Markdown converter and the charset indexes, whose package initialisation
// every keel start would pay for; keel-web runs it, and keel (internal/webfetch) talks to
// keel-web.
package htmltext

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"golang.org/x/net/html/charset"
)

// Markdown converts an HTML body to Markdown, decoded as [Decode] does, with links made
// absolute against base's scheme and host.
func Markdown(body []byte, header string, base *url.URL) (string, error) {
	utf8Body, err := Decode(body, header)
	if err != nil {
		return "", err
	}
	md, err := htmltomarkdown.ConvertString(utf8Body, converter.WithDomain(base.Scheme+"://"+base.Host))
	if err != nil {
		return "", fmt.Errorf("convert the HTML of %s to Markdown: %w", base, err)
	}
	return md, nil
}

// Decode converts body to UTF-8 using the charset of the header, the HTML's own <meta>
// declaration or a byte-order mark, and replaces what is still not valid UTF-8.
func Decode(body []byte, header string) (string, error) {
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

// InProcess converts in the calling process, with [Markdown] and [Decode]: the converter of
// webfetch's tests, and of programs that link this package anyway. It ignores ctx: a
// conversion is bounded by the size of its body.
type InProcess struct{}

// Markdown is [Markdown].
func (InProcess) Markdown(_ context.Context, body []byte, header string, base *url.URL) (string, error) {
	return Markdown(body, header, base)
}

// Decode is [Decode].
func (InProcess) Decode(_ context.Context, body []byte, header string) (string, error) {
	return Decode(body, header)
}
