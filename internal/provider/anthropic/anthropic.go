// Package anthropic is keel's adapter for the Anthropic Messages API. keel renders the request
// body itself (see [EncodeRequest]) so its bytes are stable for the prompt cache, posts it with
// net/http, and reads the event stream with the official SDK's SSE decoder
// (anthropic-sdk-go/v2/packages/ssestream). The SDK's client package is not linked: at process
// start it registers the whole API's types, which cost every keel start — `keel --version`
// included — about 7.5 MB of memory for a client whose encoder keel cannot use anyway.
// Retries belong to [provider.WithRetries].
package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/keel-dev/keel/internal/models"
	"github.com/keel-dev/keel/internal/provider"
)

// DefaultModel is used when neither the request nor ANTHROPIC_MODEL names one.
const DefaultModel = models.DefaultModel

// The environment variables [FromEnv] reads, as other Anthropic tools name them.
const (
	EnvAPIKey    = "ANTHROPIC_API_KEY"
	EnvAuthToken = "ANTHROPIC_AUTH_TOKEN"
	EnvBaseURL   = "ANTHROPIC_BASE_URL"
	EnvModel     = "ANTHROPIC_MODEL"
)

// Options configure a [Provider]. APIKey (or AuthToken) is required.
type Options struct {
	APIKey    string
	AuthToken string // sent as a bearer token, for gateways that want one
	// BaseURL defaults to https://api.anthropic.com.
	BaseURL string
	// Model is used when a request names none; empty means [DefaultModel].
	Model string
	// HTTPClient defaults to the SDK's client.
	HTTPClient *http.Client
	// Logger defaults to discarding.
	Logger *slog.Logger
	// Now is the clock for retry-after dates; nil is time.Now.
	Now func() time.Time
}

// LogValue keeps the credentials out of logs.
func (o Options) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Bool("api_key_set", o.APIKey != ""),
		slog.Bool("auth_token_set", o.AuthToken != ""),
		slog.String("base_url", o.BaseURL),
		slog.String("model", o.Model))
}

// FromEnv reads ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN, ANTHROPIC_BASE_URL and ANTHROPIC_MODEL
// through getenv (os.Getenv in the CLI; the CLI reads the environment once and passes it down).
func FromEnv(getenv func(string) string) Options {
	return Options{
		APIKey:    getenv(EnvAPIKey),
		AuthToken: getenv(EnvAuthToken),
		BaseURL:   getenv(EnvBaseURL),
		Model:     getenv(EnvModel),
	}
}

// Provider streams requests to the Messages API. It is safe for concurrent use.
type Provider struct {
	http      *http.Client
	baseURL   string
	apiKey    string
	authToken string
	model     string
	logger    *slog.Logger
	now       func() time.Time
}

var _ provider.Provider = (*Provider)(nil)

// urlSetting names where the base URL comes from, for messages.
const urlSetting = "--base-url or " + EnvBaseURL

// DefaultBaseURL is the Anthropic API.
const DefaultBaseURL = "https://api.anthropic.com"

// apiVersion is the Messages API version keel speaks.
const apiVersion = "2023-06-01"

// New returns a Provider, or an error naming the variables to set when no credential is given.
func New(opts Options) (*Provider, error) {
	if opts.APIKey == "" && opts.AuthToken == "" {
		return nil, fmt.Errorf("no Anthropic API key: set %s (or %s for a bearer-token gateway)", EnvAPIKey, EnvAuthToken)
	}
	p := &Provider{http: opts.HTTPClient, baseURL: strings.TrimRight(opts.BaseURL, "/"), apiKey: opts.APIKey,
		authToken: opts.AuthToken, model: opts.Model, logger: opts.Logger, now: opts.Now}
	if p.baseURL == "" {
		p.baseURL = DefaultBaseURL
	}
	if err := provider.CheckBaseURL(p.baseURL, urlSetting); err != nil {
		return nil, err
	}
	if p.http == nil {
		p.http = http.DefaultClient
	}
	if p.model == "" {
		p.model = DefaultModel
	}
	if p.logger == nil {
		p.logger = slog.New(slog.DiscardHandler)
	}
	if p.now == nil {
		p.now = time.Now
	}
	return p, nil
}

// Model is the model used when a request names none.
func (p *Provider) Model() string { return p.model }

// NativeToolSearch says that the Messages API loads deferred tools itself, and names its
// tool: tools with DeferLoading are sent with defer_loading and the server-side tool search
// tool (see [EncodeRequest]), and the model's searches come back as server tool blocks kept
// in the history as they are.
func (p *Provider) NativeToolSearch() string { return ToolSearchToolName }

// HelperModel is the haiku-class model behind the "haiku" alias, for tools' own requests.
func (p *Provider) HelperModel() string { return models.Builtins().Resolve("haiku") }

// ClearsToolResults reports that the Messages API clears old tool results itself (context
// editing, a beta): a request's ClearToolResults is sent as its clear_tool_uses edit.
func (p *Provider) ClearsToolResults() bool { return true }

// ServerWebSearch reports that the Messages API runs web searches itself (the web_search
// server tool), so WebSearch needs no search service of its own.
func (p *Provider) ServerWebSearch() bool { return true }

// Stream sends req and yields its events as they arrive, then one [provider.Done]. It makes
// exactly one HTTP attempt.
func (p *Provider) Stream(ctx context.Context, req *provider.Request) iter.Seq2[provider.Event, error] {
	return func(yield func(provider.Event, error) bool) {
		body, err := EncodeRequest(req, p.model)
		if err != nil {
			yield(nil, err)
			return
		}
		beta := ""
		if req.ClearToolResults != nil {
			beta = ContextManagementBeta
		}
		raw, err := p.post(ctx, body, beta)
		if err != nil {
			yield(nil, err)
			return
		}
		dec := ssestream.NewDecoder(raw)
		if dec == nil {
			yield(nil, fmt.Errorf("anthropic stream: empty response"))
			return
		}
		defer dec.Close()
		a := newAssembler(p.logger)
		a.requestID = raw.Header.Get("request-id")
		for dec.Next() {
			sse := dec.Event()
			if sse.Type == "error" {
				yield(nil, streamError(sse.Data))
				return
			}
			var ev wireEvent
			if err := json.Unmarshal(sse.Data, &ev); err != nil {
				yield(nil, fmt.Errorf("anthropic stream: %w: decode %s event: %w", provider.ErrMalformedStream, sse.Type, err))
				return
			}
			out, err := a.add(&ev)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, e := range out {
				if !yield(e, nil) {
					return
				}
			}
			if a.stopped {
				break
			}
		}
		if err := dec.Err(); err != nil {
			if provider.IsRetryable(err) {
				yield(nil, fmt.Errorf("anthropic stream: %w", err))
			} else {
				yield(nil, fmt.Errorf("anthropic stream: %w: %w", provider.ErrMalformedStream, err))
			}
			return
		}
		if !a.stopped {
			yield(nil, fmt.Errorf("anthropic stream: %w", provider.ErrStreamIncomplete))
			return
		}
		yield(a.done(), nil)
	}
}

// post sends the body, with beta (if not empty) as its anthropic-beta header; an error status
// becomes a [*provider.StatusError] with a hint.
func (p *Provider) post(ctx context.Context, body []byte, beta string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.baseURL+"/v1/messages", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("anthropic request: %w", err)
	}
	req.Header.Set("content-type", "application/json")
	req.Header.Set("accept", "text/event-stream")
	req.Header.Set("anthropic-version", apiVersion)
	if beta != "" {
		req.Header.Set("anthropic-beta", beta)
	}
	if p.apiKey != "" {
		req.Header.Set("x-api-key", p.apiKey)
	} else {
		req.Header.Set("authorization", "Bearer "+p.authToken)
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("anthropic request: %w", provider.TransportError(err, urlSetting))
	}
	if resp.StatusCode < 300 {
		return resp, nil
	}
	se := provider.StatusFromResponse("anthropic", resp, "request-id", p.now())
	switch se.StatusCode {
	case http.StatusUnauthorized:
		se.Hint = "check " + EnvAPIKey + " (or " + EnvAuthToken + ")"
	case http.StatusForbidden:
		se.Hint = "the API key is not allowed to do this; check " + EnvAPIKey + " and the key's permissions"
	case http.StatusNotFound:
		se.Hint = "check the model name (--model, " + EnvModel + ") and the base URL (" + EnvBaseURL + ")"
	case http.StatusBadRequest:
		se.Hint = "the request was rejected; the API's message above says why"
	}
	return nil, se
}

// apiError is the body of an error response and of an SSE error event.
type apiError struct {
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// streamError classifies an error event met while reading the stream. It arrives on a 200
// response, so its status is inferred from the error type.
func streamError(data []byte) error {
	var e apiError
	if err := json.Unmarshal(data, &e); err != nil {
		return fmt.Errorf("anthropic stream: undecodable error event: %s", data)
	}
	code := map[string]int{
		"invalid_request_error": http.StatusBadRequest,
		"authentication_error":  http.StatusUnauthorized,
		"permission_error":      http.StatusForbidden,
		"not_found_error":       http.StatusNotFound,
		"request_too_large":     http.StatusRequestEntityTooLarge,
		"rate_limit_error":      http.StatusTooManyRequests,
		"api_error":             http.StatusInternalServerError,
		"overloaded_error":      529,
	}[e.Error.Type]
	if code == 0 {
		code = http.StatusInternalServerError
	}
	return &provider.StatusError{Provider: "anthropic", StatusCode: code, Type: e.Error.Type, Message: "error event mid-stream: " + e.Error.Message}
}
