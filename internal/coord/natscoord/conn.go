package natscoord

import (
	"cmp"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
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
	if opts.CredsFile != "" {
		no = append(no, nats.UserCredentials(opts.CredsFile))
	}
	if opts.TLS.CAFile != "" {
		no = append(no, nats.RootCAs(opts.TLS.CAFile))
	}
	if opts.TLS.CertFile != "" || opts.TLS.KeyFile != "" {
		if opts.TLS.CertFile == "" || opts.TLS.KeyFile == "" {
			return nil, fmt.Errorf("connect to NATS at %s: tls needs both certFile and keyFile for a client certificate", Redact(opts.URL))
		}
		no = append(no, nats.ClientCert(opts.TLS.CertFile, opts.TLS.KeyFile))
	}
	nc, err := nats.Connect(opts.URL, no...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s: %w", Redact(opts.URL), err)
	}
	return nc, nil
}

// Redact removes passwords and tokens from a server URL (or comma-separated URLs), so that
// errors and logs can name the server.
func Redact(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		u, err := url.Parse(p)
		if err != nil || u.User == nil {
			parts[i] = p
			continue
		}
		if _, hasPass := u.User.Password(); hasPass {
			u.User = url.UserPassword(u.User.Username(), "REDACTED")
		} else {
			u.User = url.User("REDACTED") // a bare token
		}
		parts[i] = u.String()
	}
	return strings.Join(parts, ",")
}
