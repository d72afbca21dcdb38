package builtin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/webfetch"
)

type webFetchInput struct {
	URL    string `json:"url"`
	Prompt string `json:"prompt"`
}

const webFetchSchema = `{"type":"object","properties":{
"url":{"type":"string","format":"uri","description":"The URL to fetch"},
"prompt":{"type":"string","description":"What to find out from the page"}},
"required":["url","prompt"],"additionalProperties":false}`

// maxPageChars is how much of a page the reading model gets.
const maxPageChars = 100_000

// PageReader answers a question about a fetched page, with a small fast model.
type PageReader interface {
	ReadPage(ctx context.Context, pageURL, content, prompt string) (string, error)
}

// WebFetch returns the WebFetch tool: it fetches a URL (see [webfetch.Fetcher] for the
// limits), hands the page as Markdown with the caller's prompt to reader and returns only the
// answer. A nil reader returns the page itself. Private, loopback and link-local addresses
// are reached only when a permission rule names the host ([tool.Env.Explicit]). Read-only and
// concurrency-safe; deferred.
func WebFetch(f *webfetch.Fetcher, reader PageReader) tool.Tool {
	if f == nil {
		f = webfetch.New(webfetch.Options{})
	}
	return deferred{tool.New(tool.Spec[webFetchInput]{
		Name:              "WebFetch",
		Description:       description("WebFetch"),
		Schema:            []byte(webFetchSchema),
		IsReadOnly:        tool.Always[webFetchInput],
		IsConcurrencySafe: tool.Always[webFetchInput],
		Run: func(ctx context.Context, env *tool.Env, in webFetchInput) tool.Result {
			return runWebFetch(ctx, env, in, f, reader)
		},
	})}
}

func runWebFetch(ctx context.Context, env *tool.Env, in webFetchInput, f *webfetch.Fetcher, reader PageReader) tool.Result {
	if strings.TrimSpace(in.Prompt) == "" {
		return tool.Errorf("prompt is empty: say what to find out from the page.")
	}
	started := time.Now()
	env.Progress("fetching " + in.URL)
	page, err := f.Fetch(ctx, in.URL, env.Explicit != nil && env.Explicit())
	if err != nil {
		return fetchError(in, err)
	}
	content, note := page.Content, ""
	if r := []rune(content); len(r) > maxPageChars {
		content = string(r[:maxPageChars])
		note = fmt.Sprintf("\n\n[The page was cut to its first %d of %d characters.]", maxPageChars, len(r))
	}
	answer := content + note
	if reader != nil {
		env.Progress("reading " + page.URL)
		answer, err = reader.ReadPage(ctx, page.URL, content+note, in.Prompt)
		if err != nil {
			return tool.Errorf("Fetched %s, but the model reading it failed: %v", page.URL, err)
		}
	}
	if page.Plain {
		answer += fmt.Sprintf("\n\n(%s has no working HTTPS; this came over plain HTTP.)", hostOf(in.URL))
	}
	return tool.Result{
		Content: tool.Text(answer).Content,
		Output: map[string]any{
			"url": page.URL, "code": page.Status, "codeText": http.StatusText(page.Status), "bytes": page.Bytes,
			"result": answer, "durationMs": time.Since(started).Milliseconds(), "cached": page.Cached,
		},
	}
}

// fetchError explains a failed fetch so the model can act on it.
func fetchError(in webFetchInput, err error) tool.Result {
	var (
		priv     *webfetch.PrivateAddressError
		redirect *webfetch.RedirectError
	)
	switch {
	case errors.As(err, &priv):
		return tool.Errorf("Refused to fetch %s: %v. WebFetch reaches the local machine and private networks only for hosts a permission rule names: the user can add \"WebFetch(domain:%s)\" to permissions.allow.",
			in.URL, priv, priv.Host)
	case errors.As(err, &redirect):
		return tool.Text(fmt.Sprintf("REDIRECT: %s redirects (HTTP %d) to a different host:\n%s\n\nIt was not followed. To read it, call WebFetch again with url %q and the same prompt.",
			redirect.From, redirect.Status, redirect.To, redirect.To))
	}
	return tool.Errorf("Cannot fetch %s: %v", in.URL, err)
}

func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Hostname()
	}
	return raw
}
