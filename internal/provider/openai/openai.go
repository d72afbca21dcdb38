// Package openai is keel's adapter for OpenAI-compatible chat completions (OpenAI, Ollama,
// vLLM, llama.cpp) over the official openai-go client. keel's requests and history are shaped
// like the Anthropic Messages API; this package converts them (see [EncodeRequest]) and turns
// the streamed chunks back into keel's provider events. The SDK's own retries are off: retries
// belong to [provider.WithRetries].
package openai

import (
	"bytes"
	"context"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/keel-dev/keel/internal/provider"
)

// DefaultBaseURL is OpenAI's API.
const DefaultBaseURL = "https://api.openai.com/v1"

// The environment variables [FromEnv] reads.
const (
	EnvAPIKey  = "OPENAI_API_KEY"
	EnvBaseURL = "OPENAI_BASE_URL"
	EnvModel   = "OPENAI_MODEL"
)

// placeholderKey is sent to servers that need no key (Ollama, llama.cpp), because some client
// paths and proxies reject an empty bearer token.
const placeholderKey = "keel-no-key"

// Options configure a [Provider].
type Options struct {
	// APIKey is required for OpenAI itself; a local server (BaseURL set) may go without.
	APIKey string
	// BaseURL is the server's API root, e.g. http://127.0.0.1:11434/v1; empty means OpenAI.
	BaseURL string
	// Model is used when a request names none.
	Model string
	// HTTPClient defaults to the SDK's client.
	HTTPClient *http.Client
	// Logger defaults to discarding.
	Logger *slog.Logger
	// Now is the clock for retry-after dates; nil is time.Now.
	Now func() time.Time
}

// LogValue keeps the key out of logs.
func (o Options) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Bool("api_key_set", o.APIKey != ""),
		slog.String("base_url", o.BaseURL),
		slog.String("model", o.Model))
}

// FromEnv reads OPENAI_API_KEY, OPENAI_BASE_URL and OPENAI_MODEL through getenv (the CLI passes
// os.Getenv once; a --base-url flag then overrides BaseURL).
func FromEnv(getenv func(string) string) Options {
	return Options{APIKey: getenv(EnvAPIKey), BaseURL: getenv(EnvBaseURL), Model: getenv(EnvModel)}
}

// Provider streams chat completions. It is safe for concurrent use.
//
// The request goes out with net/http and the stream is read with the official SDK's SSE
// decoder (openai-go/v3/packages/ssestream). The SDK's client package is not linked: it
// registers hundreds of API types when the process starts, which cost every keel start,
// `keel --version` included, about 12 MB of memory for a client keel does not need — the
// body is encoded by [EncodeRequest] for byte stability anyway.
type Provider struct {
	http    *http.Client
	baseURL string
	key     string
	model   string
	logger  *slog.Logger
	now     func() time.Time
}

var _ provider.Provider = (*Provider)(nil)

// New returns a Provider. Talking to OpenAI itself needs a key; a custom base URL does not.
func New(opts Options) (*Provider, error) {
	base := opts.BaseURL
	key := opts.APIKey
	if base == "" {
		base = DefaultBaseURL
		if key == "" {
			return nil, fmt.Errorf("no OpenAI API key: set %s, or point --base-url (%s) at a local server", EnvAPIKey, EnvBaseURL)
		}
	}
	if key == "" {
		key = placeholderKey
	}
	if err := provider.CheckBaseURL(base, "--base-url or "+EnvBaseURL); err != nil {
		return nil, err
	}
	p := &Provider{http: opts.HTTPClient, baseURL: strings.TrimRight(base, "/"), key: key, model: opts.Model, logger: opts.Logger, now: opts.Now}
	if p.http == nil {
		p.http = http.DefaultClient
	}
	if p.logger == nil {
		p.logger = slog.New(slog.DiscardHandler)
	}
	if p.now == nil {
		p.now = time.Now
	}
	return p, nil
}

// Stream sends req and yields its events as they arrive, then one [provider.Done]. It makes
// exactly one HTTP attempt.
func (p *Provider) Stream(ctx context.Context, req *provider.Request) iter.Seq2[provider.Event, error] {
	return func(yield func(provider.Event, error) bool) {
		body, err := EncodeRequest(req, p.model)
		if err != nil {
			yield(nil, err)
			return
		}
		hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, p.baseURL+"/chat/completions", bytes.NewReader(body))
		if err != nil {
			yield(nil, fmt.Errorf("openai request: %w", err))
			return
		}
		hreq.Header.Set("content-type", "application/json")
		hreq.Header.Set("accept", "text/event-stream")
		hreq.Header.Set("authorization", "Bearer "+p.key)
		raw, err := p.http.Do(hreq)
		if err != nil {
			yield(nil, fmt.Errorf("openai request: %w", provider.TransportError(err, "--base-url or "+EnvBaseURL)))
			return
		}
		if raw.StatusCode >= 300 {
			yield(nil, p.statusError(raw))
			return
		}
		dec := ssestream.NewDecoder(raw)
		if dec == nil {
			yield(nil, fmt.Errorf("openai stream: empty response"))
			return
		}
		defer dec.Close()
		a := newAssembler(p.logger)
		a.requestID = raw.Header.Get("x-request-id")
		complete := false
		for dec.Next() {
			data := dec.Event().Data
			if isDone(data) {
				complete = true
				break
			}
			out, err := a.add(data)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, e := range out {
				if !yield(e, nil) {
					return
				}
			}
		}
		if err := dec.Err(); err != nil {
			yield(nil, streamErr("openai stream", err))
			return
		}
		if !complete {
			yield(nil, fmt.Errorf("openai stream: %w", provider.ErrStreamIncomplete))
			return
		}
		yield(a.done(), nil)
	}
}

// statusError turns an error response into a [provider.StatusError] the retry wrapper and
// the user can act on.
func (p *Provider) statusError(resp *http.Response) error {
	se := provider.StatusFromResponse("openai", resp, "x-request-id", p.now())
	switch se.StatusCode {
	case http.StatusUnauthorized:
		se.Hint = "check " + EnvAPIKey
	case http.StatusForbidden:
		se.Hint = "the key is not allowed to do this; check " + EnvAPIKey + " and its permissions"
	case http.StatusNotFound:
		se.Hint = "check the model name (--model, " + EnvModel + ") and the base URL (--base-url, " + EnvBaseURL + ")"
	case http.StatusBadRequest:
		se.Hint = "the request was rejected; the server's message above says why"
	}
	return se
}

// streamErr wraps an error of the SSE decoder: a network failure stays what it is (dropped,
// retried); anything else is a malformed stream, retried as well.
func streamErr(prefix string, err error) error {
	if provider.IsRetryable(err) {
		return fmt.Errorf("%s: %w", prefix, err)
	}
	return fmt.Errorf("%s: %w: %w", prefix, provider.ErrMalformedStream, err)
}
