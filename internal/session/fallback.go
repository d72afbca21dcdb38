package session

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/provider"
)

// fallbackProvider sends a request again with the fallback model when the main model is
// overloaded or unavailable, once the retries gave up.
type fallbackProvider struct {
	p        provider.Provider
	fallback string
	notify   func(from, to string, err error)
}

func (f fallbackProvider) Stream(ctx context.Context, req *provider.Request) iter.Seq2[provider.Event, error] {
	return func(yield func(provider.Event, error) bool) {
		streamed := false
		for ev, err := range f.p.Stream(ctx, req) {
			if err != nil && !streamed && req.Model != f.fallback && fallbackWorthy(err) && ctx.Err() == nil {
				f.notify(req.Model, f.fallback, err)
				again := *req
				again.Model = f.fallback
				for ev, err := range f.p.Stream(ctx, &again) {
					if !yield(ev, err) {
						return
					}
				}
				return
			}
			if _, ok := ev.(provider.Retrying); !ok && err == nil {
				streamed = true
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

// fallbackWorthy says a failure is the model's, not the request's: overloaded, unavailable,
// unknown model.
func fallbackWorthy(err error) bool {
	var se *provider.StatusError
	if errors.As(err, &se) {
		switch se.StatusCode {
		case 404, 500, 502, 503, 529:
			return true
		}
		return false
	}
	return false
}

// wrapFallback puts the fallback model around the session's provider.
func (s *Session) wrapFallback() {
	fb := s.opts.SDK.FallbackModel
	if fb == "" {
		return
	}
	s.opts.Provider = fallbackProvider{p: s.opts.Provider, fallback: fb, notify: func(from, to string, err error) {
		s.logger.Warn("model unavailable; using the fallback model", "model", from, "fallback", to, "err", err)
		s.emit(event.Notice{Level: "warn", Text: fmt.Sprintf("%s failed (%v); this request went to the fallback model %s", from, err, to)})
	}}
}
