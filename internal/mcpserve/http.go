package mcpserve

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Path is where the MCP endpoint is served.
const Path = "/mcp"

// HTTPOptions configure the streamable HTTP transport.
type HTTPOptions struct {
	// Addr is host:port to listen on; a loopback address unless Token is set.
	Addr string
	// Token, if set, must come as "Authorization: Bearer TOKEN" with every request.
	Token string
	// Ready, if set, is called with the endpoint's URL once it listens.
	Ready  func(url string)
	Logger *slog.Logger
}

// ReadTokenFile reads a bearer token from a file (surrounding space ignored).
func ReadTokenFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("token file %s is empty", path)
	}
	return tok, nil
}

// ServeHTTP serves srv over streamable HTTP (the go-sdk's handler: a session id per client,
// server-sent notifications on the standalone stream, resumable SSE streams) until ctx ends.
// Requests whose Host or Origin is not this machine's are refused (DNS rebinding); on a
// non-loopback address a bearer token is required.
func ServeHTTP(ctx context.Context, srv *mcp.Server, o HTTPOptions) error {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return fmt.Errorf("--http %q: %w (want HOST:PORT, e.g. 127.0.0.1:8080)", o.Addr, err)
	}
	if !loopback(host) && o.Token == "" {
		return fmt.Errorf("--http %s is not a loopback address: serving keel's tools beyond this machine needs --token-file", o.Addr)
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.Addr, err)
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Logger: o.Logger, EventStore: mcp.NewMemoryEventStore(nil)})
	mux := http.NewServeMux()
	mux.Handle(Path, guard(h, o.Token, loopback(host)))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(o.Logger.Handler(), slog.LevelDebug)}
	if o.Ready != nil {
		o.Ready("http://" + ln.Addr().String() + Path)
	}
	stop := context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	})
	defer stop()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", o.Addr, err)
	}
	return nil
}

// guard refuses what the MCP handler must never see: a browser page of another origin (an
// Origin that is not this machine), a rebound DNS name (a Host that is not this machine, on
// a loopback listener), and requests without the bearer token.
func guard(next http.Handler, token string, local bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" {
			u, err := url.Parse(o)
			if err != nil || !loopback(u.Hostname()) {
				http.Error(w, fmt.Sprintf("Forbidden: origin %q is not allowed", o), http.StatusForbidden)
				return
			}
		}
		if local {
			host := r.Host
			if h, _, err := net.SplitHostPort(host); err == nil {
				host = h
			}
			if !loopback(host) {
				http.Error(w, fmt.Sprintf("Forbidden: host %q is not allowed", r.Host), http.StatusForbidden)
				return
			}
		}
		if token != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="keel"`)
				http.Error(w, "Unauthorized: a bearer token is required", http.StatusUnauthorized)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func loopback(host string) bool {
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
