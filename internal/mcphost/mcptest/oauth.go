package mcptest

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// AuthServer is a minimal OAuth 2.1 authorization server on 127.0.0.1, standing in for the
// remote service a real OAuth-protected MCP server trusts: metadata (RFC 8414), dynamic client
// registration (RFC 7591), /authorize that grants the requested scopes at once and redirects
// back with a code, and /token for the authorization_code grant (PKCE S256 checked), the
// refresh_token grant (refresh tokens rotate) and the client_credentials grant. Clients may
// be pre-registered ([AuthServer.AddClient]) with a secret (client_secret_basic or _post) or
// a public key (private_key_jwt, RFC 7523); loopback redirect URIs match on any port (RFC
// 8252 §7.3). Every grant is recorded for the test to look at ([AuthServer.Grants]).
type AuthServer struct {
	// URL is the issuer.
	URL string
	// TokenTTL is the lifetime of access tokens (expires_in); an hour unless set before use.
	TokenTTL time.Duration
	// NoRegistration, set before use, leaves dynamic client registration out: only
	// pre-registered clients work.
	NoRegistration bool
	// Misbehaviour for bad-input tests, set before use: EditMetadata changes the metadata
	// document served; GarbageTokens makes /token answer 200 with a body that is not a
	// token response.
	EditMetadata  func(*oauthex.AuthServerMeta)
	GarbageTokens bool
	// MetadataRedirect, if set, makes the metadata endpoint redirect there.
	MetadataRedirect string

	mu      sync.Mutex
	clients map[string]*Client
	codes   map[string]codeGrant
	access  map[string]token
	refresh map[string]token // refresh token → what it renews
	counts  AuthCounts
	grants  []Grant
}

// Client is a client registered with the authorization server.
type Client struct {
	ID string
	// Secret, if set, must authenticate the client at the token endpoint.
	Secret string
	// Key, if set, verifies the client's signed assertions (private_key_jwt).
	Key crypto.PublicKey
	// RedirectURIs are where /authorize may send the code.
	RedirectURIs []string
}

// AuthCounts says how often each endpoint granted something.
type AuthCounts struct {
	Registrations  int // clients registered
	Authorizations int // codes issued by /authorize
	Exchanges      int // codes exchanged for tokens
	Refreshes      int // refresh_token grants
	Credentials    int // client_credentials grants
}

// Grant is one token the server issued.
type Grant struct {
	// Type is the grant type: authorization_code, refresh_token or client_credentials.
	Type   string
	Client string
	// AuthMethod is how the client authenticated: none, client_secret_basic,
	// client_secret_post or private_key_jwt.
	AuthMethod string
	Scopes     []string
	// Redirect is the code's redirect URI (authorization_code only).
	Redirect string
}

type token struct {
	client  string
	machine bool // issued by the client-credentials grant: no person behind it
	scopes  []string
	expiry  time.Time
}

type codeGrant struct {
	client, redirect, challenge string
	scopes                      []string
}

// supportedScopes are the scopes the server knows; others are refused (invalid_scope).
var supportedScopes = []string{"mcp", "offline_access", "files:read", "files:write", "admin"}

// NewAuthServer starts an authorization server; it stops with t.
func NewAuthServer(t testing.TB) *AuthServer {
	as := &AuthServer{TokenTTL: time.Hour, clients: map[string]*Client{}, codes: map[string]codeGrant{},
		access: map[string]token{}, refresh: map[string]token{}}
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	as.URL = hs.URL
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", as.metadata)
	mux.HandleFunc("POST /register", as.register)
	mux.HandleFunc("GET /authorize", as.authorize)
	mux.HandleFunc("POST /token", as.token)
	return as
}

// AddClient pre-registers a client.
func (as *AuthServer) AddClient(c Client) {
	as.mu.Lock()
	defer as.mu.Unlock()
	as.clients[c.ID] = &c
}

// Counts reports what the server granted so far.
func (as *AuthServer) Counts() AuthCounts {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.counts
}

// Grants lists the tokens issued so far, oldest first.
func (as *AuthServer) Grants() []Grant {
	as.mu.Lock()
	defer as.mu.Unlock()
	return slices.Clone(as.grants)
}

// ExpireAccessTokens makes every access token issued so far invalid, as if they had expired.
func (as *AuthServer) ExpireAccessTokens() {
	as.mu.Lock()
	defer as.mu.Unlock()
	for k, tok := range as.access {
		tok.expiry = time.Unix(1, 0)
		as.access[k] = tok
	}
}

// RevokeRefreshTokens makes every refresh token issued so far invalid.
func (as *AuthServer) RevokeRefreshTokens() {
	as.mu.Lock()
	defer as.mu.Unlock()
	clear(as.refresh)
}

// Verify is the resource server's token check (an auth.TokenVerifier).
func (as *AuthServer) Verify(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
	as.mu.Lock()
	defer as.mu.Unlock()
	t, ok := as.access[tok]
	if !ok || time.Now().After(t.expiry) {
		return nil, auth.ErrInvalidToken
	}
	// The user is the person who signed in (one, here), whichever client they used; the
	// SDK's handler refuses a session's requests made for another user.
	user := "user"
	if t.machine {
		user = t.client
	}
	return &auth.TokenInfo{Scopes: slices.Clone(t.scopes), Expiration: t.expiry, UserID: user}, nil
}

func (as *AuthServer) metadata(w http.ResponseWriter, r *http.Request) {
	if as.MetadataRedirect != "" {
		http.Redirect(w, r, as.MetadataRedirect, http.StatusFound)
		return
	}
	md := &oauthex.AuthServerMeta{
		Issuer:                            as.URL,
		AuthorizationEndpoint:             as.URL + "/authorize",
		TokenEndpoint:                     as.URL + "/token",
		ScopesSupported:                   supportedScopes,
		ResponseTypesSupported:            []string{"code"},
		GrantTypesSupported:               []string{"authorization_code", "refresh_token", "client_credentials"},
		TokenEndpointAuthMethodsSupported: []string{"none", "client_secret_basic", "client_secret_post", "private_key_jwt"},
		TokenEndpointAuthSigningAlgValuesSupported: []string{"ES256", "RS256"},
		CodeChallengeMethodsSupported:              []string{"S256"},
	}
	if !as.NoRegistration {
		md.RegistrationEndpoint = as.URL + "/register"
	}
	if as.EditMetadata != nil {
		as.EditMetadata(md)
	}
	writeJSON(w, http.StatusOK, md)
}

func (as *AuthServer) register(w http.ResponseWriter, r *http.Request) {
	if as.NoRegistration {
		http.NotFound(w, r)
		return
	}
	var md oauthex.ClientRegistrationMetadata
	if err := json.NewDecoder(r.Body).Decode(&md); err != nil || len(md.RedirectURIs) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	id := rand.Text()
	as.mu.Lock()
	as.clients[id] = &Client{ID: id, RedirectURIs: md.RedirectURIs}
	as.counts.Registrations++
	as.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{"client_id": id, "redirect_uris": md.RedirectURIs,
		"token_endpoint_auth_method": "none", "grant_types": md.GrantTypes, "client_name": md.ClientName})
}

// redirectAllowed matches a redirect URI against the registered ones; a loopback one may
// use any port, since native clients listen where they can (RFC 8252 §7.3).
func redirectAllowed(registered []string, redirect string) bool {
	if slices.Contains(registered, redirect) {
		return true
	}
	u, err := url.Parse(redirect)
	if err != nil || u.Scheme != "http" || u.Hostname() != "127.0.0.1" {
		return false
	}
	for _, r := range registered {
		ru, err := url.Parse(r)
		if err == nil && ru.Scheme == "http" && ru.Hostname() == "127.0.0.1" && ru.Path == u.Path {
			return true
		}
	}
	return false
}

// authorize grants at once: the test's "browser" follows the redirect back to the client.
func (as *AuthServer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	client, redirect := q.Get("client_id"), q.Get("redirect_uri")
	as.mu.Lock()
	defer as.mu.Unlock()
	c, ok := as.clients[client]
	if !ok || !redirectAllowed(c.RedirectURIs, redirect) {
		http.Error(w, "unknown client or redirect_uri", http.StatusBadRequest)
		return
	}
	if q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		http.Error(w, "response_type code with an S256 code_challenge is required", http.StatusBadRequest)
		return
	}
	back, _ := url.Parse(redirect)
	v := back.Query()
	v.Set("state", q.Get("state"))
	scopes := strings.Fields(q.Get("scope"))
	if len(scopes) == 0 {
		scopes = []string{"mcp"}
	}
	for _, s := range scopes {
		if !slices.Contains(supportedScopes, s) {
			v.Set("error", "invalid_scope")
			v.Set("error_description", "unknown scope "+s)
			back.RawQuery = v.Encode()
			http.Redirect(w, r, back.String(), http.StatusFound)
			return
		}
	}
	code := rand.Text()
	as.codes[code] = codeGrant{client: client, redirect: redirect, challenge: q.Get("code_challenge"), scopes: scopes}
	as.counts.Authorizations++
	v.Set("code", code)
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (as *AuthServer) token(w http.ResponseWriter, r *http.Request) {
	if as.GarbageTokens {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "<html><body>502 upstream gone</body></html>")
		return
	}
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	f := r.PostForm
	as.mu.Lock()
	defer as.mu.Unlock()
	client, method, ok := as.authenticate(r)
	if !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	g := Grant{Type: f.Get("grant_type"), Client: client, AuthMethod: method}
	switch g.Type {
	case "authorization_code":
		cg, ok := as.codes[f.Get("code")]
		delete(as.codes, f.Get("code")) // single use
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		if !ok || cg.client != client || cg.redirect != f.Get("redirect_uri") ||
			base64.RawURLEncoding.EncodeToString(sum[:]) != cg.challenge {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		g.Scopes, g.Redirect = cg.scopes, cg.redirect
		as.counts.Exchanges++
	case "refresh_token":
		old, ok := as.refresh[f.Get("refresh_token")]
		if !ok || old.client != client {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		delete(as.refresh, f.Get("refresh_token")) // rotated
		g.Scopes = old.scopes
		as.counts.Refreshes++
	case "client_credentials":
		if c := as.clients[client]; c == nil || c.Secret == "" && c.Key == nil {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "unauthorized_client"})
			return
		}
		g.Scopes = strings.Fields(f.Get("scope"))
		if len(g.Scopes) == 0 {
			g.Scopes = []string{"mcp"}
		}
		as.counts.Credentials++
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	as.grants = append(as.grants, g)
	acc := rand.Text()
	exp := time.Now().Add(as.TokenTTL)
	as.access[acc] = token{client: client, machine: g.Type == "client_credentials", scopes: g.Scopes, expiry: exp}
	resp := map[string]any{"access_token": acc, "token_type": "Bearer",
		"expires_in": int(as.TokenTTL / time.Second), "scope": strings.Join(g.Scopes, " ")}
	if g.Type != "client_credentials" {
		ref := rand.Text()
		as.refresh[ref] = token{client: client, scopes: g.Scopes}
		resp["refresh_token"] = ref
	}
	writeJSON(w, http.StatusOK, resp)
}

// authenticate finds the client of a token request and how it proved who it is; as.mu is
// held. Clients with neither secret nor key are public: their client_id is enough.
func (as *AuthServer) authenticate(r *http.Request) (client, method string, ok bool) {
	f := r.PostForm
	if id, secret, basic := r.BasicAuth(); basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
		c := as.clients[id]
		return id, "client_secret_basic", c != nil && c.Secret != "" && c.Secret == secret
	}
	if f.Get("client_assertion_type") == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
		id, err := as.verifyAssertion(f.Get("client_assertion"))
		return id, "private_key_jwt", err == nil && (f.Get("client_id") == "" || f.Get("client_id") == id)
	}
	id := f.Get("client_id")
	c := as.clients[id]
	if c == nil {
		return id, "", false
	}
	if f.Get("client_secret") != "" {
		return id, "client_secret_post", c.Secret != "" && f.Get("client_secret") == c.Secret
	}
	return id, "none", c.Secret == "" && c.Key == nil
}

// verifyAssertion checks a private_key_jwt client assertion (RFC 7523 §3): signed by the
// client's key, iss and sub the client, aud this issuer, not expired.
func (as *AuthServer) verifyAssertion(signed string) (string, error) {
	var claims jwt.RegisteredClaims
	_, err := jwt.ParseWithClaims(signed, &claims, func(t *jwt.Token) (any, error) {
		id, _ := t.Claims.GetIssuer()
		c := as.clients[id]
		if c == nil || c.Key == nil {
			return nil, jwt.ErrTokenUnverifiable
		}
		return c.Key, nil
	}, jwt.WithAudience(as.URL), jwt.WithExpirationRequired(), jwt.WithValidMethods([]string{"ES256", "ES384", "ES512", "RS256", "PS256", "EdDSA"}))
	if err != nil {
		return "", err
	}
	if claims.Subject != claims.Issuer {
		return "", jwt.ErrTokenInvalidSubject
	}
	return claims.Issuer, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Resource configures the MCP server an [AuthServer] protects.
type Resource struct {
	// ToolScopes are scopes a call of the named tool needs beyond "mcp": a token without
	// them gets 403 insufficient_scope naming them (a step-up).
	ToolScopes map[string][]string
}

// OAuthHTTP serves srv over streamable HTTP on 127.0.0.1 at /mcp, accepting only bearer
// tokens issued by as, and publishes its protected resource metadata (RFC 9728) naming as.
// It returns the MCP endpoint's URL; the server stops with t.
func OAuthHTTP(t testing.TB, srv *mcp.Server, as *AuthServer) string {
	return ProtectedHTTP(t, srv, as, Resource{})
}

// ProtectedHTTP is OAuthHTTP with per-tool scopes.
func ProtectedHTTP(t testing.TB, srv *mcp.Server, as *AuthServer, res Resource) string {
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	endpoint := hs.URL + "/mcp"
	metaURL := hs.URL + "/.well-known/oauth-protected-resource/mcp"
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: endpoint, AuthorizationServers: []string{as.URL}, ScopesSupported: []string{"mcp"},
	}))
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	mux.Handle("/mcp", auth.RequireBearerToken(as.Verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: metaURL})(stepUp(h, res, metaURL)))
	return endpoint
}

// stepUp answers 403 insufficient_scope to a tools/call whose token lacks the tool's scopes.
func stepUp(next http.Handler, res Resource, metaURL string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || len(res.ToolScopes) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		body, err := readBody(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		need := res.ToolScopes[msg.Params.Name]
		info := auth.TokenInfoFromContext(r.Context())
		if msg.Method == "tools/call" && len(need) > 0 && info != nil {
			for _, s := range need {
				if !slices.Contains(info.Scopes, s) {
					scope := strings.Join(append([]string{"mcp"}, need...), " ")
					w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+scope+`", resource_metadata="`+metaURL+`"`)
					http.Error(w, "insufficient_scope", http.StatusForbidden)
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// readBody reads a request's body and puts it back for the next handler.
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	return b, err
}
