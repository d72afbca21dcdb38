// Package anthropic is keel's adapter for the Anthropic Messages API over the official
// anthropic-sdk-go client. keel renders the request body itself (see [EncodeRequest]) so its
// bytes are stable for the prompt cache, and hands it to the SDK's client, transport and SSE
// decoder. The SDK's own retries are off: retries belong to [provider.WithRetries].
package anthropic

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/keel-dev/keel/internal/provider"
)

// DefaultModel is used when neither the request nor ANTHROPIC_MODEL names one.
const DefaultModel = "claude-sonnet-4-5"

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
	client sdk.Client
	model  string
	logger *slog.Logger
	now    func() time.Time
}

var _ provider.Provider = (*Provider)(nil)

// New returns a Provider, or an error naming the variables to set when no credential is given.
func New(opts Options) (*Provider, error) {
	if opts.APIKey == "" && opts.AuthToken == "" {
		return nil, fmt.Errorf("no Anthropic API key: set %s (or %s for a bearer-token gateway)", EnvAPIKey, EnvAuthToken)
	}
	ropts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(), // the caller resolved the environment already
		option.WithMaxRetries(0),            // retries are provider.WithRetries's job
	}
	if opts.APIKey != "" {
		ropts = append(ropts, option.WithAPIKey(opts.APIKey))
	} else {
		ropts = append(ropts, option.WithAuthToken(opts.AuthToken))
	}
	if opts.BaseURL != "" {
		ropts = append(ropts, option.WithBaseURL(opts.BaseURL))
	}
	if opts.HTTPClient != nil {
		ropts = append(ropts, option.WithHTTPClient(opts.HTTPClient))
	}
	p := &Provider{client: sdk.NewClient(ropts...), model: opts.Model, logger: opts.Logger, now: opts.Now}
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

// Stream sends req and yields its events as they arrive, then one [provider.Done]. It makes
// exactly one HTTP attempt.
func (p *Provider) Stream(ctx context.Context, req *provider.Request) iter.Seq2[provider.Event, error] {
	return func(yield func(provider.Event, error) bool) {
		body, err := EncodeRequest(req, p.model)
		if err != nil {
			yield(nil, err)
			return
		}
		var raw *http.Response
		err = p.client.Post(ctx, "v1/messages", nil, &raw,
			option.WithRequestBody("application/json", body),
			option.WithHeader("accept", "text/event-stream"))
		if err != nil {
			yield(nil, p.requestError(err))
			return
		}
		stream := ssestream.NewStream[wireEvent](ssestream.NewDecoder(raw), nil)
		defer stream.Close()
		a := newAssembler(p.logger)
		a.requestID = raw.Header.Get("request-id")
		for stream.Next() {
			ev := stream.Current()
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
		if err := stream.Err(); err != nil {
			yield(nil, p.streamError(err))
			return
		}
		if !a.stopped {
			yield(nil, fmt.Errorf("anthropic stream: %w", provider.ErrStreamIncomplete))
			return
		}
		yield(a.done(), nil)
	}
}

// requestError turns the SDK's error for a failed request into a [*provider.StatusError] with
// a hint, or wraps a transport error.
func (p *Provider) requestError(err error) error {
	apiErr, ok := errors.AsType[*sdk.Error](err)
	if !ok {
		return fmt.Errorf("anthropic request: %w", err)
	}
	se := &provider.StatusError{
		Provider:   "anthropic",
		StatusCode: apiErr.StatusCode,
		Type:       string(apiErr.Type()),
		Message:    apiErr.Message,
		RequestID:  apiErr.RequestID,
	}
	if apiErr.Response != nil {
		h := apiErr.Response.Header
		se.After, _ = provider.ParseRetryAfter(h, p.now())
		switch h.Get("x-should-retry") {
		case "true":
			se.ShouldRetry = new(true)
		case "false":
			se.ShouldRetry = new(false)
		}
	}
	if se.Message == "" {
		se.Message = apiErr.RawJSON()
	}
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
	return se
}

// streamError classifies an error met while reading the event stream. An SSE error event
// arrives on a 200 response, so its status is inferred from the error type.
func (p *Provider) streamError(err error) error {
	apiErr, ok := errors.AsType[*sdk.Error](err)
	if !ok {
		return fmt.Errorf("anthropic stream: %w", err)
	}
	typ := string(apiErr.Type())
	code := map[string]int{
		"invalid_request_error": http.StatusBadRequest,
		"authentication_error":  http.StatusUnauthorized,
		"permission_error":      http.StatusForbidden,
		"not_found_error":       http.StatusNotFound,
		"request_too_large":     http.StatusRequestEntityTooLarge,
		"rate_limit_error":      http.StatusTooManyRequests,
		"api_error":             http.StatusInternalServerError,
		"overloaded_error":      529,
	}[typ]
	if code == 0 {
		code = http.StatusInternalServerError
	}
	return &provider.StatusError{
		Provider:   "anthropic",
		StatusCode: code,
		Type:       typ,
		Message:    "error event mid-stream: " + apiErr.Message,
		RequestID:  apiErr.RequestID,
	}
}
