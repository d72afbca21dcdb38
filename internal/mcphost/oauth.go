package mcphost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
	// Authorize sends the user to the authorization page authURL of the server called
	// server (shows it, opens a browser). It should return once the user has been sent
	// there: the authorization server then redirects the browser to a listener on 127.0.0.1,
	// which completes the flow; ctx ends when the flow does. Nil means nobody can be asked
	// (headless): a server without usable tokens gets status needs-auth, and
	// `keel mcp login NAME` fixes that.
	//
	// With Authorize set (an interactive session), connecting and step-ups run the flow
	// themselves. On connecting the user gets LoginTimeout to finish, and a sign-in not
	// completed leaves the server in needs-auth rather than sending the user to the browser
	// again; a step-up is bounded by its call.
	Authorize func(ctx context.Context, server, authURL string) error
	// ClientName is the client_name registered with the authorization server; "keel" if empty.
	ClientName string
	// LoginTimeout bounds how long Login, or connecting, waits for the browser to come back;
	// DefaultLoginTimeout if zero.
	LoginTimeout time.Duration
	// ClientSecret is $MCP_CLIENT_SECRET: the secret of pre-registered clients whose
	// configuration gives none.
	ClientSecret string
}

// errNotSignedIn marks a flow the user did not complete in the browser.
var errNotSignedIn = errors.New("sign-in not completed")

// needsAuthError says a server wants authorization that was not (yet) given.
type needsAuthError struct{ msg string }

func (e *needsAuthError) Error() string { return e.msg }

func needsAuth(name string) *needsAuthError {
	return &needsAuthError{msg: fmt.Sprintf("server %q needs authorization: run `keel mcp login %s`", name, name)}
}

// maxStepUps bounds the step-up authorizations of one connection: a server that keeps
// answering insufficient_scope must not send the user to the browser forever.
const maxStepUps = 2

// oauthHandler returns the OAuth handler of a streamable HTTP connection: it offers the stored
// tokens (refreshed as they expire, and saved again) and, on a 401 or a 403 for
// insufficient_scope, runs the authorization flow or reports what the user must do.
func (c *conn) oauthHandler(hc *http.Client) auth.OAuthHandler {
	m := c.m
	h := &oauthFlow{m: m, cfg: c.cfg, hc: hc, signingIn: c.signingIn, failed: c.authFailed}
	if a := m.opts.OAuth.Authorize; a != nil {
		h.authorize = func(ctx context.Context, authURL string) error { return a(ctx, c.cfg.Name, authURL) }
	}
	if l := c.loginState(); l != nil {
		h.authorize, h.fresh, h.login = l.authorize, true, l
	}
	st, err := m.loadAuth(c.cfg)
	if err != nil {
		// A damaged file is not fatal: the server asks again and the new tokens replace it.
		m.logger.Warn("mcp oauth: stored tokens unusable", "server", c.cfg.Name, "err", err)
	}
	if st != nil {
		h.granted = slices.Clone(st.Scopes)
		h.wanted = slices.Clone(st.Wanted)
		if !h.fresh && st.Token != nil {
			h.ts = h.saving(context.Background(), st.config(), st.Token)
		}
	}
	return h
}

// loginState marks a connection made for `keel mcp login`: it authorizes anew, once.
type loginState struct {
	authorize func(ctx context.Context, authURL string) error
	// authorized is set when the flow ran (guarded by the manager's mu).
	authorized bool
}

// oauthFlow is one connection's auth.OAuthHandler. The protocol work — metadata discovery,
// registration, PKCE, the code exchange — is the SDK's AuthorizationCodeHandler; this adds
// keel's token store, the loopback redirect, configured clients, the client-credentials
// grant, step-up bookkeeping and the headless answers.
type oauthFlow struct {
	m   *Manager
	cfg ServerConfig
	hc  *http.Client
	// authorize sends the user to the authorization page; nil: nobody can be asked.
	authorize func(ctx context.Context, authURL string) error
	// fresh skips the stored tokens: login asks anew. login, if set, records that it did.
	fresh bool
	login *loginState
	// signingIn is told the page the user was sent to, and "" when the browser came back;
	// failed why an authorization failed.
	signingIn func(url string)
	failed    func(error)

	// mu guards ts, granted, wanted and stepUps.
	mu      sync.Mutex
	ts      oauth2.TokenSource
	granted []string // scopes of the current token
	wanted  []string // scopes a server asked for that the token lacks
	stepUps int
}

// TokenSource implements auth.OAuthHandler.
func (h *oauthFlow) TokenSource(context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ts, nil
}

// Authorize implements auth.OAuthHandler: the server answered 401 (or 403).
func (h *oauthFlow) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	err := h.authorizeOnce(ctx, req, resp)
	if err != nil && h.failed != nil {
		h.failed(err)
	}
	return err
}

func (h *oauthFlow) authorizeOnce(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	stepUp := resp.StatusCode == http.StatusForbidden
	if stepUp && challengeParam(challenges, "error") != "insufficient_scope" {
		// Only a 403 for insufficient_scope wants authorization; returning nil lets the
		// transport report the server's answer as it is.
		return nil
	}
	if !stepUp && !h.fresh && h.cfg.OAuth.grant() != GrantClientCredentials {
		// The server may reject a token before its announced expiry; a refresh is cheaper
		// than asking the user.
		if ts := h.refreshed(req); ts != nil {
			h.setToken(ts, nil)
			return nil
		}
	}
	required := strings.Fields(challengeParam(challenges, "scope"))
	if stepUp {
		h.mu.Lock()
		have := slices.Clone(h.granted)
		h.stepUps++
		tries := h.stepUps
		h.mu.Unlock()
		if len(required) > 0 && subset(required, have) || tries > maxStepUps {
			return fmt.Errorf("server %q refuses the request for insufficient_scope although the token has scopes %q", h.cfg.Name, strings.Join(have, " "))
		}
		if h.authorize == nil && h.cfg.OAuth.grant() != GrantClientCredentials {
			h.want(required)
			return &needsAuthError{msg: fmt.Sprintf("server %q needs more authorization (scopes %q): run `keel mcp login %s`", h.cfg.Name, strings.Join(union(have, required), " "), h.cfg.Name)}
		}
	}
	if h.cfg.OAuth.grant() == GrantClientCredentials {
		return h.clientCredentials(ctx, req, challenges)
	}
	if h.authorize == nil {
		return needsAuth(h.cfg.Name)
	}
	return h.authorizationCode(ctx, req, resp)
}

// authorizationCode runs the authorization code flow with PKCE through the user's browser.
func (h *oauthFlow) authorizationCode(ctx context.Context, req *http.Request, resp *http.Response) error {
	o := h.cfg.OAuth
	ln, err := listenCallback(o)
	if err != nil {
		return err
	}
	defer ln.Close()
	redirect := "http://" + ln.Addr().String() + "/callback"
	name := h.m.opts.OAuth.ClientName
	if name == "" {
		name = "keel"
	}
	cfg := &auth.AuthorizationCodeHandlerConfig{
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
		Client:                   h.hc,
		// Ask for what the server asks now, what it asked before and the token already had
		// (a step-up must not lose scopes), and what the configuration adds.
		ScopeFilter: func(discovered []string) []string {
			h.mu.Lock()
			defer h.mu.Unlock()
			return union(union(union(h.granted, h.wanted), discovered), o.scopes())
		},
		// The token source is built here so every token, refreshed ones too, is saved.
		NewTokenSource: func(ctx context.Context, oc *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			if err := h.m.saveAuth(h.cfg, storedFrom(h.cfg, oc, tok)); err != nil {
				return nil, err
			}
			ts := h.saving(ctx, oc, tok)
			h.setToken(ts, oc.Scopes)
			return ts, nil
		},
	}
	switch {
	case o.cimd():
		// Where the server does not take metadata documents, keel registers itself.
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: o.ClientID}
	case o != nil && o.ClientID != "":
		pre := &oauthex.ClientCredentials{ClientID: o.ClientID}
		if secret := h.m.clientSecret(h.cfg); secret != "" {
			pre.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: secret}
		}
		cfg.PreregisteredClient, cfg.DynamicClientRegistrationConfig = pre, nil
	}
	ach, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return fmt.Errorf("oauth: %w", err)
	}
	if err := ach.Authorize(ctx, req, resp); err != nil {
		if errors.Is(err, errNotSignedIn) {
			// Asking again at once would only send the user back to the browser.
			return &needsAuthError{msg: fmt.Sprintf("server %q needs authorization: %v; run `keel mcp login %s` to try again", h.cfg.Name, err, h.cfg.Name)}
		}
		return fmt.Errorf("authorize %s: %w", h.cfg.Name, err)
	}
	h.authorized()
	h.m.logger.Info("mcp oauth: authorized", "server", h.cfg.Name)
	return nil
}

// listenCallback listens for the authorization redirect on the loopback interface: on the
// configured callback port (a pre-registered redirect URI names it), else on a free one.
func listenCallback(o *OAuthConfig) (net.Listener, error) {
	addr := "127.0.0.1:0"
	if o != nil && o.CallbackPort > 0 {
		addr = "127.0.0.1:" + strconv.Itoa(o.CallbackPort)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for the authorization redirect on %s: %w", addr, err)
	}
	return ln, nil
}

func (h *oauthFlow) setToken(ts oauth2.TokenSource, scopes []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ts = ts
	if scopes != nil {
		h.granted = slices.Clone(scopes)
		h.wanted = nil
	}
}

func (h *oauthFlow) authorized() {
	if h.login == nil {
		return
	}
	h.m.mu.Lock()
	h.login.authorized = true
	h.m.mu.Unlock()
}

// want records scopes the server asked for, so the next `keel mcp login` requests them.
func (h *oauthFlow) want(scopes []string) {
	h.mu.Lock()
	h.wanted = union(h.wanted, scopes)
	wanted := slices.Clone(h.wanted)
	h.mu.Unlock()
	h.m.authMu.Lock()
	defer h.m.authMu.Unlock()
	st, err := h.m.loadAuth(h.cfg)
	if err != nil || st == nil {
		return
	}
	st.Wanted = wanted
	if err := h.m.saveAuth(h.cfg, st); err != nil {
		h.m.logger.Warn("mcp oauth: record wanted scopes", "server", h.cfg.Name, "err", err)
	}
}

func challengeParam(cs []oauthex.Challenge, key string) string {
	for _, c := range cs {
		if c.Scheme == "bearer" && c.Params[key] != "" {
			return c.Params[key]
		}
	}
	return ""
}

// union returns a's scopes followed by those of b it lacks.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func subset(a, b []string) bool {
	for _, s := range a {
		if !slices.Contains(b, s) {
			return false
		}
	}
	return true
}

func (o *OAuthConfig) grant() string {
	if o == nil || o.GrantType == "" {
		return GrantAuthorizationCode
	}
	return o.GrantType
}

func (o *OAuthConfig) scopes() []string {
	if o == nil {
		return nil
	}
	return o.Scopes
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
		if h.signingIn != nil {
			h.signingIn(args.URL)
			defer h.signingIn("")
		}
		if err := h.authorize(ctx, args.URL); err != nil {
			return nil, fmt.Errorf("open the authorization page: %w", err)
		}
		select {
		case res := <-got:
			return res, nil
		case err := <-denied:
			return nil, fmt.Errorf("%w: %w", errNotSignedIn, err)
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: the browser did not come back in time", errNotSignedIn)
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
	// Wanted are scopes a server asked for that Token lacks: the next login requests them.
	Wanted []string      `json:"wanted_scopes,omitempty"`
	Token  *oauth2.Token `json:"token"`
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

// Logout forgets the stored tokens of the server called name.
func (m *Manager) Logout(name string) error {
	c := m.find(name)
	if c == nil {
		return fmt.Errorf("logout %s: no such MCP server", name)
	}
	cfg := c.cfg
	if m.opts.OAuth.Home == "" {
		m.authMem.Delete(AuthKey(cfg))
		return nil
	}
	if err := os.Remove(AuthPath(m.opts.OAuth.Home, cfg)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("logout %s: %w", name, err)
	}
	return nil
}
