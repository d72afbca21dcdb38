package mcphost

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/keel-dev/keel/internal/atomicfile"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// DefaultLoginTimeout bounds how long Login waits for the user to finish in the browser.
const DefaultLoginTimeout = 5 * time.Minute

// OAuthOptions configures OAuth 2.1 (authorization code with PKCE, dynamic client
// registration, loopback redirect) for streamable HTTP servers that answer 401.
type OAuthOptions struct {
	// Home is $KEEL_HOME: tokens are kept in Home/mcp-auth/<server-key>.json with mode 0600.
	// Empty keeps them in memory, for the manager's life.
	Home string
	// Authorize sends the user to authURL (prints it, opens a browser). It may return before
	// the user is done: the authorization server then redirects the browser to a listener on
	// 127.0.0.1, which completes the flow. Nil means nobody can be asked (headless): a server
	// without usable tokens gets status needs-auth, and `keel mcp login NAME` fixes that.
	//
	// With Authorize set, connecting runs the flow itself, within ConnectTimeout; Login gives
	// the user LoginTimeout.
	Authorize func(ctx context.Context, authURL string) error
	// ClientName is the client_name registered with the authorization server; "keel" if empty.
	ClientName string
	// LoginTimeout bounds Login; DefaultLoginTimeout if zero.
	LoginTimeout time.Duration
}

// needsAuthError says a server wants authorization that was not (yet) given.
type needsAuthError struct{ msg string }

func (e *needsAuthError) Error() string { return e.msg }

func needsAuth(name string) *needsAuthError {
	return &needsAuthError{msg: fmt.Sprintf("server %q needs authorization: run `keel mcp login %s`", name, name)}
}

// oauthHandler returns the OAuth handler of a streamable HTTP connection: it offers the stored
// tokens (refreshed as they expire, and saved again) and, on a 401, runs the authorization
// flow or reports needs-auth.
func (m *Manager) oauthHandler(cfg ServerConfig, hc *http.Client) (auth.OAuthHandler, error) {
	h := &oauthFlow{m: m, cfg: cfg, interactive: m.opts.OAuth.Authorize != nil}
	st, err := m.loadAuth(cfg)
	if err != nil {
		// A damaged file is not fatal: the server asks again and the new tokens replace it.
		m.logger.Warn("mcp oauth: stored tokens unusable", "server", cfg.Name, "err", err)
	}
	if st != nil {
		h.ts = h.saving(context.Background(), st.config(), st.Token)
	}
	return h, nil
}

// oauthFlow is one connection's auth.OAuthHandler. The protocol work — metadata discovery,
// registration, PKCE, the code exchange — is the SDK's AuthorizationCodeHandler; this adds
// keel's token store, the loopback redirect and the headless answer.
type oauthFlow struct {
	m           *Manager
	cfg         ServerConfig
	interactive bool
	// fresh skips the stored tokens: Login asks anew.
	fresh bool

	mu sync.Mutex
	ts oauth2.TokenSource
}

// TokenSource implements auth.OAuthHandler.
func (h *oauthFlow) TokenSource(context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ts, nil
}

// Authorize implements auth.OAuthHandler: the server answered 401 (or 403).
func (h *oauthFlow) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	if resp.StatusCode == http.StatusUnauthorized && !h.fresh {
		// The server may reject a token before its announced expiry; a refresh is cheaper
		// than asking the user.
		if ts := h.refreshed(req); ts != nil {
			resp.Body.Close()
			h.mu.Lock()
			h.ts = ts
			h.mu.Unlock()
			return nil
		}
	}
	if !h.interactive {
		resp.Body.Close()
		if resp.StatusCode == http.StatusForbidden {
			// Only a 403 for insufficient_scope wants authorization, which nobody can give
			// here; returning nil lets the transport report the server's answer as it is.
			return nil
		}
		return needsAuth(h.cfg.Name)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		resp.Body.Close()
		return fmt.Errorf("listen for the authorization redirect: %w", err)
	}
	defer ln.Close()
	redirect := "http://" + ln.Addr().String() + "/callback"
	name := h.m.opts.OAuth.ClientName
	if name == "" {
		name = "keel"
	}
	ach, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName:              name,
			RedirectURIs:            []string{redirect},
			GrantTypes:              []string{"authorization_code", "refresh_token"},
			ResponseTypes:           []string{"code"},
			TokenEndpointAuthMethod: "none",
		}},
		RedirectURL:              redirect,
		AuthorizationCodeFetcher: h.fetcher(ln),
		RequestRefreshToken:      true,
		// The token source is built here so every token, refreshed ones too, is saved.
		NewTokenSource: func(ctx context.Context, oc *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			if err := h.m.saveAuth(h.cfg, storedFrom(h.cfg, oc, tok)); err != nil {
				return nil, err
			}
			return h.saving(ctx, oc, tok), nil
		},
	})
	if err != nil {
		resp.Body.Close()
		return fmt.Errorf("oauth: %w", err)
	}
	if err := ach.Authorize(ctx, req, resp); err != nil {
		return fmt.Errorf("authorize: %w", err)
	}
	ts, err := ach.TokenSource(ctx)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.ts = ts
	h.mu.Unlock()
	h.m.logger.Info("mcp oauth: authorized", "server", h.cfg.Name)
	return nil
}

// refreshed returns a source of a token other than the one req carried: the stored one if
// another request or process already refreshed, else a newly refreshed one; nil if there is
// none to be had without the user.
func (h *oauthFlow) refreshed(req *http.Request) oauth2.TokenSource {
	// One refresh at a time: refresh tokens rotate, so a second refresh with the same one
	// would fail.
	h.m.authMu.Lock()
	defer h.m.authMu.Unlock()
	st, err := h.m.loadAuth(h.cfg)
	if err != nil || st == nil || st.Token.RefreshToken == "" {
		return nil
	}
	sent := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
	if st.Token.AccessToken != sent && st.Token.Valid() {
		return h.saving(context.Background(), st.config(), st.Token)
	}
	expired := *st.Token
	expired.Expiry = time.Unix(1, 0)
	ts := h.saving(context.Background(), st.config(), &expired)
	if _, err := ts.Token(); err != nil {
		h.m.logger.Info("mcp oauth: refresh after 401", "server", h.cfg.Name, "err", err)
		return nil
	}
	return ts
}

// fetcher sends the user to the authorization page and waits for the redirect on ln.
func (h *oauthFlow) fetcher(ln net.Listener) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		got := make(chan *auth.AuthorizationResult, 1)
		denied := make(chan error, 1)
		srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/callback" {
				http.NotFound(w, r)
				return
			}
			q := r.URL.Query()
			if e := q.Get("error"); e != "" {
				fmt.Fprintf(w, "keel: authorization failed: %s. You can close this window.\n", e)
				select {
				case denied <- fmt.Errorf("authorization server said %s: %s", e, q.Get("error_description")):
				default:
				}
				return
			}
			fmt.Fprintln(w, "keel: authorization complete. You can close this window.")
			select {
			case got <- &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}:
			default: // a second redirect; the first one counts
			}
		})}
		go srv.Serve(ln)
		defer func() {
			// Shutdown lets the browser's page finish loading.
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
		if err := h.m.opts.OAuth.Authorize(ctx, args.URL); err != nil {
			return nil, fmt.Errorf("open the authorization page: %w", err)
		}
		select {
		case res := <-got:
			return res, nil
		case err := <-denied:
			return nil, err
		case <-ctx.Done():
			return nil, fmt.Errorf("no authorization redirect: %w", ctx.Err())
		}
	}
}

// saving wraps oc's token source (which refreshes) so each new token is written to the store.
func (h *oauthFlow) saving(ctx context.Context, oc *oauth2.Config, tok *oauth2.Token) oauth2.TokenSource {
	return &savingSource{base: oc.TokenSource(ctx, tok), last: tok.AccessToken, save: func(t *oauth2.Token) {
		if err := h.m.saveAuth(h.cfg, storedFrom(h.cfg, oc, t)); err != nil {
			h.m.logger.Warn("mcp oauth: save refreshed token", "server", h.cfg.Name, "err", err)
		}
	}}
}

type savingSource struct {
	base oauth2.TokenSource
	save func(*oauth2.Token)

	mu   sync.Mutex
	last string // access token last saved
}

func (s *savingSource) Token() (*oauth2.Token, error) {
	t, err := s.base.Token()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.AccessToken != s.last {
		s.last = t.AccessToken
		s.save(t)
	}
	return t, nil
}

// storedAuth is a server's token file: the token and what refreshing it needs.
type storedAuth struct {
	ServerURL    string           `json:"server_url"`
	ClientID     string           `json:"client_id"`
	ClientSecret string           `json:"client_secret,omitempty"`
	AuthStyle    oauth2.AuthStyle `json:"auth_style,omitempty"`
	AuthURL      string           `json:"auth_url"`
	TokenURL     string           `json:"token_url"`
	Scopes       []string         `json:"scopes,omitempty"`
	Token        *oauth2.Token    `json:"token"`
}

func storedFrom(cfg ServerConfig, oc *oauth2.Config, tok *oauth2.Token) *storedAuth {
	return &storedAuth{ServerURL: cfg.URL, ClientID: oc.ClientID, ClientSecret: oc.ClientSecret, AuthStyle: oc.Endpoint.AuthStyle,
		AuthURL: oc.Endpoint.AuthURL, TokenURL: oc.Endpoint.TokenURL, Scopes: slices.Clone(oc.Scopes), Token: tok}
}

func (s *storedAuth) config() *oauth2.Config {
	return &oauth2.Config{ClientID: s.ClientID, ClientSecret: s.ClientSecret, Scopes: s.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: s.AuthURL, TokenURL: s.TokenURL, AuthStyle: s.AuthStyle}}
}

// AuthKey names a server's token file: its normalised name and a hash of its URL, so a server
// whose URL changed (or another scope's server of the same name) never gets these tokens.
func AuthKey(cfg ServerConfig) string {
	sum := sha256.Sum256([]byte(cfg.URL))
	return Normalize(cfg.Name) + "-" + hex.EncodeToString(sum[:6])
}

// AuthPath is where a server's tokens are kept under home ($KEEL_HOME).
func AuthPath(home string, cfg ServerConfig) string {
	return filepath.Join(home, "mcp-auth", AuthKey(cfg)+".json")
}

func (m *Manager) loadAuth(cfg ServerConfig) (*storedAuth, error) {
	var data []byte
	if home := m.opts.OAuth.Home; home != "" {
		b, err := os.ReadFile(AuthPath(home, cfg))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read tokens: %w", err)
		}
		data = b
	} else if v, ok := m.authMem.Load(AuthKey(cfg)); ok {
		data = v.([]byte)
	} else {
		return nil, nil
	}
	var st storedAuth
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("parse tokens: %w", err)
	}
	if st.ServerURL != cfg.URL || st.Token == nil || st.TokenURL == "" {
		return nil, nil
	}
	return &st, nil
}

func (m *Manager) saveAuth(cfg ServerConfig, st *storedAuth) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode tokens: %w", err)
	}
	home := m.opts.OAuth.Home
	if home == "" {
		m.authMem.Store(AuthKey(cfg), data)
		return nil
	}
	path := AuthPath(home, cfg)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("save tokens: %w", err)
	}
	if err := atomicfile.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("save tokens: %w", err)
	}
	return nil
}

// Login runs the authorization flow for the HTTP server called name, whether or not it has
// tokens, stores the new tokens and reconnects the server. It needs OAuth.Authorize, and
// gives the user OAuth.LoginTimeout (bounded by ctx).
func (m *Manager) Login(ctx context.Context, name string) error {
	i := slices.IndexFunc(m.conns, func(c *conn) bool { return c.cfg.Name == name })
	if i < 0 {
		return fmt.Errorf("login %s: no such MCP server", name)
	}
	cfg := m.conns[i].cfg
	if cfg.Type != TypeHTTP {
		return fmt.Errorf("login %s: only streamable HTTP servers use OAuth; this one is %s", name, cfg.Type)
	}
	if cfg.Disabled != "" {
		return fmt.Errorf("login %s: server is disabled: %s", name, cfg.Disabled)
	}
	if m.opts.OAuth.Authorize == nil {
		return fmt.Errorf("login %s: no way to open the authorization page", name)
	}
	timeout := m.opts.OAuth.LoginTimeout
	if timeout <= 0 {
		timeout = DefaultLoginTimeout
	}
	lctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hc, err := httpClient(lctx, cfg, m.opts.Environ, m.opts.Dir)
	if err != nil {
		return fmt.Errorf("login %s: %w", name, err)
	}
	// An initialize without a token draws the server's 401 and its WWW-Authenticate
	// challenge, from which the SDK discovers the authorization server.
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":%q,"version":%q}}}`,
		ProtocolVersion, m.opts.ClientName, m.opts.ClientVersion)
	req, err := http.NewRequestWithContext(lctx, http.MethodPost, cfg.URL, bytes.NewReader([]byte(body)))
	if err != nil {
		return fmt.Errorf("login %s: %w", name, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("login %s: %w", name, err)
	}
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
			del, _ := http.NewRequestWithContext(lctx, http.MethodDelete, cfg.URL, nil)
			del.Header.Set("Mcp-Session-Id", sid)
			if r, err := hc.Do(del); err == nil {
				r.Body.Close()
			}
		}
		m.logger.Info("mcp oauth: server did not ask for authorization", "server", name, "status", resp.StatusCode)
	} else {
		flow := &oauthFlow{m: m, cfg: cfg, interactive: true, fresh: true}
		if err := flow.Authorize(lctx, req, resp); err != nil {
			return fmt.Errorf("login %s: %w", name, err)
		}
	}
	return m.Reconnect(ctx, name)
}

// Logout forgets the stored tokens of the server called name.
func (m *Manager) Logout(name string) error {
	i := slices.IndexFunc(m.conns, func(c *conn) bool { return c.cfg.Name == name })
	if i < 0 {
		return fmt.Errorf("logout %s: no such MCP server", name)
	}
	cfg := m.conns[i].cfg
	if m.opts.OAuth.Home == "" {
		m.authMem.Delete(AuthKey(cfg))
		return nil
	}
	if err := os.Remove(AuthPath(m.opts.OAuth.Home, cfg)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("logout %s: %w", name, err)
	}
	return nil
}
