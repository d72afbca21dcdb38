package provider

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
)

// PermanentError is a failure no retry can fix: a wrong base URL, a host that does not exist,
// a certificate that does not verify. Its message says what to fix.
type PermanentError struct {
	Err  error
	Hint string
}

func (e *PermanentError) Error() string { return e.Err.Error() + "; " + e.Hint }
func (e *PermanentError) Unwrap() error { return e.Err }

// Retryable reports false: see [RetryClassifier].
func (e *PermanentError) Retryable() bool { return false }

// RetryAfter is 0: see [RetryClassifier].
func (e *PermanentError) RetryAfter() time.Duration { return 0 }

// TransportError classifies an error of the HTTP round trip to a model API: failures no retry
// can fix become a [*PermanentError] naming what to check (urlSetting is where the base URL
// comes from, e.g. "--base-url or ANTHROPIC_BASE_URL"); anything else is returned as it is,
// for [IsRetryable] to judge.
func TransportError(err error, urlSetting string) error {
	switch kind := permanentTransport(err); kind {
	case "scheme":
		return &PermanentError{Err: err, Hint: "the base URL must start with http:// or https://; check " + urlSetting}
	case "dns":
		return &PermanentError{Err: err, Hint: "the model API's host name does not resolve; check " + urlSetting + " and the network's DNS"}
	case "tls":
		return &PermanentError{Err: err, Hint: "the model API's TLS certificate does not verify; check " + urlSetting + " and the system's CA certificates"}
	}
	return err
}

// permanentTransport names the kind of a transport failure that repeating cannot fix, or "".
func permanentTransport(err error) string {
	if dns, ok := errors.AsType[*net.DNSError](err); ok {
		if dns.IsNotFound && !dns.IsTemporary && !dns.IsTimeout {
			return "dns"
		}
		return ""
	}
	if ue, ok := errors.AsType[*url.Error](err); ok && strings.Contains(ue.Err.Error(), "unsupported protocol scheme") {
		return "scheme"
	}
	var (
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
	)
	if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok ||
		errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalid) {
		return "tls"
	}
	return ""
}

// CheckBaseURL refuses a base URL no request could reach, before any is sent.
func CheckBaseURL(raw, setting string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("base URL %q (%s) is not a URL: %w", raw, setting, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("base URL %q (%s) has unsupported scheme %q; use an http:// or https:// URL", raw, setting, u.Scheme)
	}
	if u.Host == "" {
		return fmt.Errorf("base URL %q (%s) names no host; use a URL like https://api.example.com", raw, setting)
	}
	return nil
}
