package provider

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"
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
	if errors.Is(err, syscall.ECONNREFUSED) {
		return refused(err, urlSetting)
	}
	return err
}

// RefusedError is a connection to the model API that its address refused: nothing listens
// there, or not yet. It is retried; [WithRetries] gives up on a local address (loopback or
// private, where a server is started by hand) after a few quick attempts, with the Hint.
type RefusedError struct {
	URL string
	// Local says the address is loopback, private or link-local.
	Local bool
	Hint  string
	Err   error
}

func (e *RefusedError) Error() string { return "connection refused to " + e.URL }
func (e *RefusedError) Unwrap() error { return e.Err }

// refused classifies a refused connection: where it went, and whether that is a local address.
func refused(err error, urlSetting string) *RefusedError {
	re := &RefusedError{Err: err, Hint: "nothing is listening there: start the model server, or check " + urlSetting}
	host := ""
	if ue, ok := errors.AsType[*url.Error](err); ok {
		re.URL = ue.URL
		if u, perr := url.Parse(ue.URL); perr == nil {
			re.URL = u.Scheme + "://" + u.Host + u.Path
			host = u.Hostname()
		}
	}
	if oe, ok := errors.AsType[*net.OpError](err); ok && oe.Addr != nil {
		if ta, ok := oe.Addr.(*net.TCPAddr); ok {
			host = ta.IP.String()
		}
		if re.URL == "" {
			re.URL = oe.Addr.String()
		}
	}
	if ip := net.ParseIP(host); ip != nil {
		re.Local = ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast()
	} else {
		re.Local = host == "localhost"
	}
	return re
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
