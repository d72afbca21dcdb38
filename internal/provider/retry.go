package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// RetryClassifier is how an adapter's error tells [WithRetries] whether another attempt can help
// and how long the server asked to wait. Adapters return errors implementing it (usually a
// [*StatusError]); errors without it are classified by [IsRetryable].
type RetryClassifier interface {
	Retryable() bool
	// RetryAfter is the wait the server asked for (retry-after, retry-after-ms), or 0.
	RetryAfter() time.Duration
}

type classifiedError interface {
	error
	RetryClassifier
}

// ErrStreamIncomplete means the response stream ended before the message was complete (no
// message_stop, no [DONE]): the connection dropped mid-stream. It is retried.
var ErrStreamIncomplete = errors.New("response stream ended before the message was complete")

// ErrMalformedStream means the response stream carried an event that does not decode or does
// not fit the event sequence (a delta for a block never started, a second message_start): a
// broken proxy or a cut buffer. Like a dropped stream, it is retried.
var ErrMalformedStream = errors.New("malformed response stream")

// StatusError is an HTTP error answer of a model API. Hint says what the user can do about it
// (check a variable, a model name); Message is the API's own explanation.
type StatusError struct {
	Provider   string // "anthropic", "openai"
	StatusCode int
	Type       string // the API's error type, e.g. "overloaded_error"
	Message    string
	Hint       string
	RequestID  string
	// After is the wait the server asked for; 0 when it did not say.
	After time.Duration
	// ShouldRetry is the server's x-should-retry answer when it gave one.
	ShouldRetry *bool
}

func (e *StatusError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s API: %d %s", e.Provider, e.StatusCode, http.StatusText(e.StatusCode))
	if e.Type != "" {
		fmt.Fprintf(&b, " (%s)", e.Type)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " [request-id %s]", e.RequestID)
	}
	if e.Hint != "" {
		fmt.Fprintf(&b, "; %s", e.Hint)
	}
	return b.String()
}

// Retryable reports whether the status is worth another attempt: 408, 409, 429, 5xx and 529.
// 400, 401, 403 and 404 never are, whatever the server's x-should-retry says: repeating the
// same request cannot fix a bad key, model or body.
func (e *StatusError) Retryable() bool {
	switch e.StatusCode {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
		return false
	}
	if e.ShouldRetry != nil {
		return *e.ShouldRetry
	}
	return RetryableStatus(e.StatusCode)
}

// RetryAfter returns the wait the server asked for.
func (e *StatusError) RetryAfter() time.Duration { return e.After }

// RetryableStatus reports whether an HTTP status is transient.
func RetryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusConflict ||
		code == http.StatusTooManyRequests || code >= 500
}

// ParseRetryAfter reads retry-after-ms (milliseconds) or retry-after (seconds or an HTTP date,
// relative to now). It reports false when neither header holds a usable value.
func ParseRetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("retry-after"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, t.Sub(now)), true
	}
	return 0, false
}

// IsRetryable classifies an attempt's error: a [RetryClassifier] decides for itself; otherwise
// dropped and refused connections, unexpected EOFs and incomplete streams are retried.
// Cancellation and deadlines of the caller's context are never retried (the caller checks its
// context separately, since a dial error can wrap a deadline of its own).
func IsRetryable(err error) bool {
	if err == nil {
		return false
	}
	if c, ok := errors.AsType[classifiedError](err); ok {
		return c.Retryable()
	}
	if errors.Is(err, context.Canceled) {
		return false
	}
	if _, ok := errors.AsType[*PermanentError](err); ok {
		return false
	}
	if permanentTransport(err) != "" {
		return false
	}
	switch {
	case errors.Is(err, ErrStreamIncomplete),
		errors.Is(err, ErrMalformedStream),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EPIPE):
		return true
	}
	if _, ok := errors.AsType[net.Error](err); ok {
		return true
	}
	return false
}

// RetryPolicy says how often and how patiently [WithRetries] tries again. The zero value is the
// default: 10 attempts, 500 ms × 2^(attempt−1) up to 32 s, minus up to 25 % jitter.
type RetryPolicy struct {
	MaxAttempts int // 0 means 10
	// LocalRefusedAttempts caps the attempts when a loopback or private address refuses the
	// connection ([RefusedError]): a local server that is not running does not start by
	// itself, and the user should hear so at once. 0 means 3.
	LocalRefusedAttempts int
	BaseDelay            time.Duration // 0 means 500 ms
	MaxDelay             time.Duration // 0 means 32 s
	// Sleep waits d or until ctx ends; nil uses a timer. Tests inject one so they never wait.
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter returns how much to take off a computed delay, in [0, d/4]; nil is random.
	Jitter func(d time.Duration) time.Duration
	// Now is the clock for retry-after dates; nil is time.Now.
	Now func() time.Time
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 10
	}
	if p.LocalRefusedAttempts <= 0 {
		p.LocalRefusedAttempts = 3
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = 500 * time.Millisecond
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 32 * time.Second
	}
	if p.Sleep == nil {
		p.Sleep = sleepCtx
	}
	if p.Jitter == nil {
		p.Jitter = func(d time.Duration) time.Duration {
			if d < 4 {
				return 0
			}
			return rand.N(d / 4)
		}
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	return p
}

// Delay is the wait before the attempt after the one numbered attempt (from 1) failed with err:
// the server's retry-after when it gave one, else exponential backoff with jitter.
func (p RetryPolicy) Delay(attempt int, err error) time.Duration {
	p = p.withDefaults()
	if c, ok := errors.AsType[classifiedError](err); ok && c.RetryAfter() > 0 {
		return c.RetryAfter()
	}
	d := p.MaxDelay
	if attempt-1 < 32 {
		d = min(p.BaseDelay<<(attempt-1), p.MaxDelay)
	}
	return d - p.Jitter(d)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// WithRetries wraps p so that transient failures are tried again per policy. Events of an attempt
// are passed on as they arrive; when the attempt then fails, a [Retrying] event tells the
// consumer to discard what it accumulated before the next attempt's events start. Only a
// model request is repeated — the caller runs tools after Done, so no tool runs twice. A nil
// logger discards.
func WithRetries(p Provider, policy RetryPolicy, logger *slog.Logger) Provider {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &retrying{inner: p, policy: policy.withDefaults(), logger: logger}
}

type retrying struct {
	inner  Provider
	policy RetryPolicy
	logger *slog.Logger
}

// Unwrap returns the retried provider, so its capabilities (e.g. [NativeToolSearcher]) show.
func (r *retrying) Unwrap() Provider { return r.inner }

func (r *retrying) Stream(ctx context.Context, req *Request) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		for attempt := 1; ; attempt++ {
			var failed error
			for ev, err := range r.inner.Stream(ctx, req) {
				if err != nil {
					failed = err
					break
				}
				if !yield(ev, nil) {
					return
				}
				if _, ok := ev.(Done); ok {
					return
				}
			}
			if failed == nil {
				// A provider that ends without Done or error broke its contract; treat it like
				// a dropped stream.
				failed = ErrStreamIncomplete
			}
			if ctx.Err() != nil {
				yield(nil, fmt.Errorf("model request: %w", context.Cause(ctx)))
				return
			}
			if !IsRetryable(failed) {
				yield(nil, failed)
				return
			}
			most := r.policy.MaxAttempts
			refused, isRefused := errors.AsType[*RefusedError](failed)
			if isRefused && refused.Local {
				most = min(most, r.policy.LocalRefusedAttempts)
			}
			if attempt >= most {
				err := fmt.Errorf("after %d attempts: %w", attempt, failed)
				if isRefused {
					err = &PermanentError{Err: err, Hint: refused.Hint}
				}
				yield(nil, err)
				return
			}
			delay := r.policy.Delay(attempt, failed)
			r.logger.Warn("model request failed, retrying",
				"source", req.Source, "attempt", attempt, "delay", delay, "err", failed)
			// A person reads the retry line: the refused address, not the adapter's wrapping.
			shown := failed
			if isRefused {
				shown = refused
			}
			if !yield(Retrying{Attempt: attempt, MaxAttempts: most, Delay: delay, Err: shown}, nil) {
				return
			}
			if err := r.policy.Sleep(ctx, delay); err != nil {
				yield(nil, fmt.Errorf("model request: waiting to retry after %d attempts: %w", attempt, err))
				return
			}
		}
	}
}
