package natscoord

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/keel-dev/keel/internal/coord"
)

// Reconnection: forever, starting fast and backing off to a few seconds, with jitter so that
// a team's members do not all knock at once when a server comes back.
const (
	reconnectFirst = 100 * time.Millisecond
	reconnectMax   = 4 * time.Second
)

// dial connects with reconnection, credentials and TLS as configured. reconnected runs after
// every reconnect.
func dial(opts Options, log *slog.Logger, reconnected func()) (*nats.Conn, error) {
	if strings.TrimSpace(opts.URL) == "" {
		return nil, fmt.Errorf("connect to NATS: no server URL (set coordination.url in settings or KEEL_NATS_URL)")
	}
	state := func(s State) {
		if opts.OnState != nil {
			opts.OnState(s)
		}
	}
	no := []nats.Option{
		nats.Name(cmp.Or(opts.Name, "keel")),
		nats.MaxReconnects(-1),
		// Without this nats.go stops reconnecting for good after the same authorization error
		// twice (a credentials rotation half done); keep trying with backoff, the state shows it.
		nats.IgnoreAuthErrorAbort(),
		nats.CustomReconnectDelay(func(attempts int) time.Duration {
			d := reconnectFirst << min(attempts, 6)
			return min(d, reconnectMax)
		}),
		nats.ReconnectJitter(50*time.Millisecond, 250*time.Millisecond),
		// Detect a dead server within seconds, not the default two minutes.
		nats.PingInterval(2 * time.Second),
		nats.MaxPingsOutstanding(2),
		nats.Timeout(5 * time.Second),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			log.Warn("nats: disconnected", "url", Redact(nc.ConnectedUrl()), "err", err)
			state(State{URL: Redact(nc.ConnectedUrl()), Err: err})
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("nats: reconnected", "url", Redact(nc.ConnectedUrl()))
			state(State{Connected: true, URL: Redact(nc.ConnectedUrl())})
			reconnected()
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subj := ""
			if sub != nil {
				subj = sub.Subject
			}
			log.Warn("nats: async error", "subject", subj, "err", err)
		}),
	}
	var user *jwt.UserClaims
	if opts.CredsFile != "" {
		path, claims, err := checkCreds(opts.CredsFile)
		if err != nil {
			return nil, fmt.Errorf("connect to NATS at %s: %w", Redact(opts.URL), err)
		}
		// nats.go reads the file again on every (re)connect, so a rotated file is picked up.
		// It gets the expanded path: it expands one for the JWT but not for the seed.
		user = claims
		no = append(no, nats.UserCredentials(path))
	}
	tlsFiles := opts.TLS
	for _, f := range []*string{&tlsFiles.CAFile, &tlsFiles.CertFile, &tlsFiles.KeyFile} {
		if *f == "" {
			continue
		}
		p, err := expandPath(*f)
		if err != nil {
			return nil, fmt.Errorf("connect to NATS at %s: tls file %s: %w", Redact(opts.URL), *f, err)
		}
		*f = p
	}
	if tlsFiles.CAFile != "" {
		no = append(no, nats.RootCAs(tlsFiles.CAFile))
	}
	if tlsFiles.CertFile != "" || tlsFiles.KeyFile != "" {
		if tlsFiles.CertFile == "" || tlsFiles.KeyFile == "" {
			return nil, fmt.Errorf("connect to NATS at %s: tls needs both certFile and keyFile for a client certificate", Redact(opts.URL))
		}
		no = append(no, nats.ClientCert(tlsFiles.CertFile, tlsFiles.KeyFile))
	}
	nc, err := nats.Connect(opts.URL, no...)
	if err != nil {
		if isAuthError(err) {
			return nil, fmt.Errorf("connect to NATS at %s: authorization failed: %s: %w", Redact(opts.URL), authHint(opts, user), err)
		}
		return nil, fmt.Errorf("connect to NATS at %s: %w", Redact(opts.URL), err)
	}
	return nc, nil
}

// checkCreds reads a credentials file before the first connect, so that a missing or
// malformed file is reported as such, naming it, instead of as a failed handshake. It
// returns the file's expanded path and its user's claims, for explaining a refusal.
func checkCreds(file string) (string, *jwt.UserClaims, error) {
	path, err := expandPath(file)
	if err != nil {
		return "", nil, fmt.Errorf("credentials file %s: %w", file, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", nil, fmt.Errorf("read credentials file (coordination.credsFile): %w", err)
	}
	defer clear(data) // it holds the user's private seed
	bad := func(what string, err error) error {
		return fmt.Errorf("credentials file %s is not a NATS user credentials file (want the user JWT and seed that `nsc generate creds` writes): %s: %w", path, what, err)
	}
	tok, err := nkeys.ParseDecoratedJWT(data)
	if err != nil {
		return "", nil, bad("user JWT", err)
	}
	claims, err := jwt.DecodeUserClaims(tok)
	if err != nil {
		return "", nil, bad("user JWT", err)
	}
	kp, err := nkeys.ParseDecoratedUserNKey(data)
	if err != nil {
		return "", nil, bad("user seed", err)
	}
	kp.Wipe()
	return path, claims, nil
}

// expandPath expands environment variables and a leading ~ (the home directory) in a
// credentials or TLS file's path, as nats.go does for a creds file's JWT (though not for its
// seed, nor for TLS files).
func expandPath(file string) (string, error) {
	p := os.ExpandEnv(file)
	rest, ok := strings.CutPrefix(p, "~")
	if !ok {
		return p, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, rest), nil
}

func isAuthError(err error) bool {
	return errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) ||
		errors.Is(err, nats.ErrAuthRevoked) || errors.Is(err, nats.ErrAccountAuthExpired)
}

// authHint says, for an authorization failure, which credentials the server refused and
// what to check. user is the credentials file's user, nil when none is configured.
func authHint(opts Options, user *jwt.UserClaims) string {
	if opts.CredsFile == "" {
		if urlHasUser(opts.URL) {
			return "the server refused the user or token in the URL"
		}
		return "the server wants credentials and none are configured (set coordination.credsFile to a .creds file, or put user:password in the URL)"
	}
	hint := "the server refused the credentials in " + opts.CredsFile
	if user != nil && user.Expires != 0 && time.Now().Unix() >= user.Expires {
		return hint + " (their user JWT expired at " + time.Unix(user.Expires, 0).UTC().Format(time.RFC3339) + ")"
	}
	return hint + " (does the server trust the operator and account that signed them, and is the user not revoked?)"
}

// urlHasUser reports whether any of the comma-separated URLs carries a user or token.
func urlHasUser(urls string) bool {
	for p := range strings.SplitSeq(urls, ",") {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			return true
		}
	}
	return false
}

// Redact removes passwords and tokens from a server URL (coord.RedactURL).
func Redact(urls string) string { return coord.RedactURL(urls) }
