package mcptest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// AuthServer is a minimal OAuth 2.1 authorization server on 127.0.0.1, standing in for the
// remote service a real OAuth-protected MCP server trusts: metadata (RFC 8414), dynamic client
// registration (RFC 7591), /authorize that grants at once and redirects back with a code,
// and /token for the authorization_code grant (PKCE S256 checked) and the refresh_token grant
// (refresh tokens rotate).
type AuthServer struct {
	// URL is the issuer.
	URL string
	// TokenTTL is the lifetime of access tokens (expires_in); an hour unless set before use.
	TokenTTL time.Duration

	mu      sync.Mutex
	clients map[string][]string // client_id → redirect URIs
	codes   map[string]codeGrant
	access  map[string]time.Time // access token → expiry
	refresh map[string]string    // refresh token → client_id
	counts  AuthCounts
}

// AuthCounts says how often each endpoint granted something.
type AuthCounts struct {
	Registrations  int // clients registered
	Authorizations int // codes issued by /authorize
	Exchanges      int // codes exchanged for tokens
	Refreshes      int // refresh_token grants
}

type codeGrant struct {
	client, redirect, challenge string
}

// NewAuthServer starts an authorization server; it stops with t.
func NewAuthServer(t testing.TB) *AuthServer {
	as := &AuthServer{TokenTTL: time.Hour, clients: map[string][]string{}, codes: map[string]codeGrant{},
		access: map[string]time.Time{}, refresh: map[string]string{}}
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

// Counts reports what the server granted so far.
func (as *AuthServer) Counts() AuthCounts {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.counts
}

// ExpireAccessTokens makes every access token issued so far invalid, as if they had expired.
func (as *AuthServer) ExpireAccessTokens() {
	as.mu.Lock()
	defer as.mu.Unlock()
	for tok := range as.access {
		as.access[tok] = time.Unix(1, 0)
	}
}

// RevokeRefreshTokens makes every refresh token issued so far invalid.
func (as *AuthServer) RevokeRefreshTokens() {
	as.mu.Lock()
	defer as.mu.Unlock()
	clear(as.refresh)
}

// Verify is the resource server's token check (an auth.TokenVerifier).
func (as *AuthServer) Verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	as.mu.Lock()
	defer as.mu.Unlock()
	exp, ok := as.access[token]
	if !ok || time.Now().After(exp) {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{Scopes: []string{"mcp"}, Expiration: exp}, nil
}

func (as *AuthServer) metadata(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, &oauthex.AuthServerMeta{
		Issuer:                            as.URL,
		AuthorizationEndpoint:             as.URL + "/authorize",
		TokenEndpoint:                     as.URL + "/token",
		RegistrationEndpoint:              as.URL + "/register",
		ScopesSupported:                   []string{"mcp", "offline_access"},
		ResponseTypesSupported:            []string{"code"},
		GrantTypesSupported:               []string{"authorization_code", "refresh_token"},
		TokenEndpointAuthMethodsSupported: []string{"none"},
		CodeChallengeMethodsSupported:     []string{"S256"},
	})
}

func (as *AuthServer) register(w http.ResponseWriter, r *http.Request) {
	var md oauthex.ClientRegistrationMetadata
	if err := json.NewDecoder(r.Body).Decode(&md); err != nil || len(md.RedirectURIs) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	id := rand.Text()
	as.mu.Lock()
	as.clients[id] = md.RedirectURIs
	as.counts.Registrations++
	as.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{"client_id": id, "redirect_uris": md.RedirectURIs,
		"token_endpoint_auth_method": "none", "grant_types": md.GrantTypes, "client_name": md.ClientName})
}

// authorize grants at once: the test's "browser" follows the redirect back to the client.
func (as *AuthServer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	client, redirect := q.Get("client_id"), q.Get("redirect_uri")
	as.mu.Lock()
	defer as.mu.Unlock()
	if uris, ok := as.clients[client]; !ok || !slices.Contains(uris, redirect) {
		http.Error(w, "unknown client or redirect_uri", http.StatusBadRequest)
		return
	}
	if q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		http.Error(w, "response_type code with an S256 code_challenge is required", http.StatusBadRequest)
		return
	}
	code := rand.Text()
	as.codes[code] = codeGrant{client: client, redirect: redirect, challenge: q.Get("code_challenge")}
	as.counts.Authorizations++
	back, _ := url.Parse(redirect)
	v := back.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (as *AuthServer) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	f := r.PostForm
	as.mu.Lock()
	defer as.mu.Unlock()
	client := f.Get("client_id")
	switch f.Get("grant_type") {
	case "authorization_code":
		g, ok := as.codes[f.Get("code")]
		delete(as.codes, f.Get("code")) // single use
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		if !ok || g.client != client || g.redirect != f.Get("redirect_uri") ||
			base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		as.counts.Exchanges++
	case "refresh_token":
		if owner, ok := as.refresh[f.Get("refresh_token")]; !ok || owner != client {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		delete(as.refresh, f.Get("refresh_token")) // rotated
		as.counts.Refreshes++
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	acc, ref := rand.Text(), rand.Text()
	as.access[acc] = time.Now().Add(as.TokenTTL)
	as.refresh[ref] = client
	writeJSON(w, http.StatusOK, map[string]any{"access_token": acc, "token_type": "Bearer",
		"expires_in": int(as.TokenTTL / time.Second), "refresh_token": ref, "scope": "mcp offline_access"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// OAuthHTTP serves srv over streamable HTTP on 127.0.0.1 at /mcp, accepting only bearer
// tokens issued by as, and publishes its protected resource metadata (RFC 9728) naming as.
// It returns the MCP endpoint's URL; the server stops with t.
func OAuthHTTP(t testing.TB, srv *mcp.Server, as *AuthServer) string {
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	endpoint := hs.URL + "/mcp"
	metaURL := hs.URL + "/.well-known/oauth-protected-resource/mcp"
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: endpoint, AuthorizationServers: []string{as.URL}, ScopesSupported: []string{"mcp"},
	}))
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	mux.Handle("/mcp", auth.RequireBearerToken(as.Verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: metaURL})(h))
	return endpoint
}
