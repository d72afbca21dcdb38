// Command keel-web turns a page WebFetch fetched into text: HTML into Markdown with its links
// made absolute, or (-text) text in another charset into UTF-8. keel starts it once per page,
// writes the body to its stdin and reads the result from its stdout:
//
//	keel-web -base https://example.com/docs -content-type 'text/html; charset=iso-8859-1' <page.html
//
// A failure is one line on stderr and exit status 1 (2 for a wrong command line).
//
// It is a program of its own so that keel does not link the HTML parser, the HTML → Markdown
// converter and the charset indexes (internal/webfetch/htmltext): their package
// initialisation cost every keel start about a megabyte of RSS and a tenth of its start-up
// time, while a fetch waits for the network far longer than keel-web takes to start.
package main

import (
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"

	"github.com/keel-dev/keel/internal/webfetch/htmltext"
)

// defaultMaxBytes is WebFetch's own limit on a body (webfetch.DefaultMaxBytes); keel passes
// its limit with -max-bytes.
const defaultMaxBytes = 10 << 20

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, in io.Reader, out, stderr io.Writer) int {
	fs := flag.NewFlagSet("keel-web", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: keel-web [-text] [-content-type HEADER] [-base URL] [-max-bytes N] <body >text")
		fs.PrintDefaults()
	}
	base := fs.String("base", "", "the page's URL: links are made absolute against its scheme and host (required for HTML)")
	header := fs.String("content-type", "", "the response's Content-Type header, with its charset")
	text := fs.Bool("text", false, "the body is text, not HTML: only decode it to UTF-8")
	maxBytes := fs.Int64("max-bytes", defaultMaxBytes, "refuse a body larger than this")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "keel-web: unexpected argument %q: the body comes on stdin\n", fs.Arg(0))
		return 2
	}
	if err := convert(in, out, *header, *base, *text, *maxBytes); err != nil {
		fmt.Fprintf(stderr, "keel-web: %v\n", err)
		return 1
	}
	return 0
}

func convert(in io.Reader, out io.Writer, header, rawBase string, text bool, maxBytes int64) error {
	var base *url.URL
	if !text {
		var err error
		if base, err = url.Parse(rawBase); err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
			return fmt.Errorf("-base %q is not an http or https URL: HTML's links are made absolute against it", rawBase)
		}
	}
	body, err := io.ReadAll(io.LimitReader(in, maxBytes+1))
	if err != nil {
		return fmt.Errorf("read the body: %w", err)
	}
	if int64(len(body)) > maxBytes {
		return fmt.Errorf("the body is over the %d-byte limit", maxBytes)
	}
	var result string
	if text {
		result, err = htmltext.Decode(body, header)
	} else {
		result, err = htmltext.Markdown(body, header, base)
	}
	if err != nil {
		return err
	}
	if _, err := io.WriteString(out, result); err != nil {
		return fmt.Errorf("write the result: %w", err)
	}
	return nil
}
