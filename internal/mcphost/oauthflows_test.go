package mcphost

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/keel-dev/keel/internal/mcphost/mcptest"
	"github.com/keel-dev/keel/internal/porttest"
	"github.com/keel-dev/keel/internal/waittest"
)

// pages is an OAuthOptions.Authorize that only records where the user was sent; the test
// plays the user by opening the page itself, when it wants to.
func pages(got chan<- string) func(context.Context, string, string) error {
	return func(_ context.Context, server, u string) error {
		got <- server + " " + u
		return nil
	}
}

// TestOAuthSignInDoesNotHoldStart: in an interactive session a server that needs a sign-in
// does not hold up the start: Start returns with the server pending and its status naming
// the page; once the browser comes back the server connects.
func TestOAuthSignInDoesNotHoldStart(t *testing.T) {
	as, cfg := oauthServer(t)
	sent := make(chan string, 4)
	m := New(Options{Servers: []ServerConfig{cfg}, OAuth: OAuthOptions{Home: t.TempDir(), Authorize: pages(sent)}, Logger: testLogger(t)})
	t.Cleanup(func() { m.Close() })
	m.Start(waittest.Context(t))
	got := waittest.Recv(t, "the sign-in page", sent)
	server, page, _ := strings.Cut(got, " ")
	if server != "t" || !strings.HasPrefix(page, as.URL+"/authorize?") {
		t.Fatalf("sent the user to %q", got)
	}
	if st := m.Status()[0]; st.Status != StatusPending || st.Reason != "waiting for you to sign in: "+page {
		t.Errorf("status while signing in = %s (%s)", st.Status, st.Reason)
	}
	var opened atomic.Int32
	if err := browser(&opened)(t.Context(), page); err != nil {
		t.Fatal(err)
	}
	m.WaitSettled(waittest.Context(t))
	wantConnected(t, m)
	if diff := cmp.Diff(mcptest.AuthCounts{Registrations: 1, Authorizations: 1, Exchanges: 1}, as.Counts()); diff != "" {
		t.Errorf("authorization server counts mismatch (-want +got):\n%s", diff)
	}
}

// TestOAuthSignInAbandoned: a sign-in the user does not finish ends in needs-auth, naming
// the command that tries again, and the user is not sent to the browser a second time.
func TestOAuthSignInAbandoned(t *testing.T) {
	_, cfg := oauthServer(t)
	sent := make(chan string, 4)
	m := start(t, Options{Servers: []ServerConfig{cfg}, Reconnect: Backoff{Base: time.Millisecond, Max: time.Millisecond, Attempts: 3},
		//keel:duration meant to pass: the sign-in is never finished
		OAuth: OAuthOptions{Home: t.TempDir(), Authorize: pages(sent), LoginTimeout: 300 * time.Millisecond}})
	st := m.Status()[0]
	if st.Status != StatusNeedsAuth {
		t.Fatalf("status = %s (%s), want needs-auth", st.Status, st.Reason)
	}
	for _, want := range []string{`server "t" needs authorization`, "sign-in not completed", "keel mcp login t"} {
		if !strings.Contains(st.Reason, want) {
			t.Errorf("reason %q lacks %q", st.Reason, want)
		}
	}
	if n := len(sent); n != 1 {
		t.Errorf("the user was sent to the browser %d times, want once", n)
	}
}

// TestOAuthStepUp: a call refused for insufficient_scope is authorized again with the union
// of the scopes the token had and those the server asks for — interactively at once, and
// headless through `keel mcp login`, which asks for the wider scopes the call recorded.
func TestOAuthStepUp(t *testing.T) {
	scopes := func(as *mcptest.AuthServer) [][]string {
		var out [][]string
		for _, g := range as.Grants() {
			out = append(out, g.Scopes)
		}
		return out
	}
	newServer := func(t *testing.T) (*mcptest.AuthServer, ServerConfig) {
		as := mcptest.NewAuthServer(t)
		u := mcptest.ProtectedHTTP(t, mcptest.New().Server, as, mcptest.Resource{ToolScopes: map[string][]string{"echo": {"files:write"}}})
		// The configuration adds a scope of its own, which every authorization keeps.
		return as, ServerConfig{Name: "t", Type: TypeHTTP, URL: u, Scope: ScopeUser, OAuth: &OAuthConfig{Scopes: Scopes{"files:read"}}}
	}
	sorted := cmpopts.SortSlices(func(a, b string) bool { return a < b })

	t.Run("interactive", func(t *testing.T) {
		as, cfg := newServer(t)
		home := t.TempDir()
		var opened atomic.Int32
		m := start(t, Options{Servers: []ServerConfig{cfg}, OAuth: OAuthOptions{Home: home, Authorize: signIn(&opened)}})
		wantConnected(t, m) // echo needs the step-up: one more authorization
		want := [][]string{{"mcp", "files:read", "offline_access"}, {"mcp", "files:read", "files:write", "offline_access"}}
		if diff := cmp.Diff(want, scopes(as), sorted); diff != "" {
			t.Errorf("granted scopes mismatch (-want +got):\n%s", diff)
		}
		if got := as.Counts().Authorizations; got != 2 || opened.Load() != 2 {
			t.Errorf("authorizations = %d, pages opened = %d; want 2 each", got, opened.Load())
		}
		if diff := cmp.Diff([]string{"mcp", "files:read", "files:write", "offline_access"}, readStored(t, AuthPath(home, cfg)).Scopes, sorted); diff != "" {
			t.Errorf("stored scopes mismatch (-want +got):\n%s", diff)
		}
		// The wider token serves later calls without asking again.
		if res := call(t, m, "mcp__t__echo", `{"text":"again"}`); res.IsError {
			t.Fatal(res.ResultText())
		}
		if opened.Load() != 2 {
			t.Errorf("a call with the wider token opened the page again")
		}
	})

	t.Run("headless", func(t *testing.T) {
		as, cfg := newServer(t)
		home := t.TempDir()
		var opened atomic.Int32
		first := start(t, Options{Servers: []ServerConfig{cfg}, OAuth: OAuthOptions{Home: home}})
		if err := first.Login(t.Context(), "t", browser(&opened)); err != nil {
			t.Fatal(err)
		}
		first.Close()

		m := start(t, Options{Servers: []ServerConfig{cfg}, OAuth: OAuthOptions{Home: home}})
		res := call(t, m, "mcp__t__echo", `{"text":"hi"}`)
		if !res.IsError || !strings.Contains(res.ResultText(), "keel mcp login t") || !strings.Contains(res.ResultText(), "files:write") {
			t.Fatalf("headless step-up = %q (error %v), want an error naming `keel mcp login t` and the scope", res.ResultText(), res.IsError)
		}
		if err := m.Login(t.Context(), "t", browser(&opened)); err != nil {
			t.Fatal(err)
		}
		wantConnected(t, m)
		want := [][]string{{"mcp", "files:read", "offline_access"}, {"mcp", "files:read", "files:write", "offline_access"}}
		if diff := cmp.Diff(want, scopes(as), sorted); diff != "" {
			t.Errorf("granted scopes mismatch (-want +got):\n%s", diff)
		}
	})
}

// TestOAuthPreRegistered: a client registered in advance is used as configured (no dynamic
// registration), its secret from the entry or from MCP_CLIENT_SECRET, its redirect on the
// configured callback port.
func TestOAuthPreRegistered(t *testing.T) {
	port := porttest.Free(t)
	for _, tc := range []struct {
		name      string
		oauth     OAuthConfig
		envSecret string
		redirect  string // the redirect URI's port, if fixed
	}{
		{name: "secret in the entry", oauth: OAuthConfig{ClientID: "keel-pre", ClientSecret: "s3cret"}},
		{name: "secret from MCP_CLIENT_SECRET", oauth: OAuthConfig{ClientID: "keel-pre"}, envSecret: "s3cret"},
		{name: "callback port", oauth: OAuthConfig{ClientID: "keel-pre", ClientSecret: "s3cret", CallbackPort: port}, redirect: strconv.Itoa(port)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as := mcptest.NewAuthServer(t)
			as.NoRegistration = true
			as.AddClient(mcptest.Client{ID: "keel-pre", Secret: "s3cret", RedirectURIs: []string{"http://127.0.0.1/callback"}})
			u := mcptest.OAuthHTTP(t, mcptest.New().Server, as)
			o := tc.oauth
			cfg := ServerConfig{Name: "t", Type: TypeHTTP, URL: u, Scope: ScopeUser, OAuth: &o}
			var opened atomic.Int32
			m := start(t, Options{Servers: []ServerConfig{cfg}, OAuth: OAuthOptions{Home: t.TempDir(), ClientSecret: tc.envSecret}})
			if err := m.Login(t.Context(), "t", browser(&opened)); err != nil {
				t.Fatal(err)
			}
			wantConnected(t, m)
			grants := as.Grants()
			if len(grants) != 1 {
				t.Fatalf("grants = %+v, want one", grants)
			}
			g := grants[0]
			if g.Client != "keel-pre" || g.AuthMethod != "client_secret_basic" && g.AuthMethod != "client_secret_post" {
				t.Errorf("grant by %s with %s, want keel-pre with its secret", g.Client, g.AuthMethod)
			}
			if as.Counts().Registrations != 0 {
				t.Errorf("keel registered itself although a client was configured")
			}
			if ru, _ := url.Parse(g.Redirect); tc.redirect != "" && ru.Port() != tc.redirect {
				t.Errorf("redirect %s, want port %s", g.Redirect, tc.redirect)
			}
		})
	}
}

// TestOAuthClientCredentials: a server for machines gets a token by the client-credentials
// grant — with the client's secret (HTTP Basic) or a JWT signed by its private key — and
// nobody is sent to a browser.
func TestOAuthClientCredentials(t *testing.T) {
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeKey := func(name string, key any) string {
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tc := range []struct {
		name   string
		client mcptest.Client
		oauth  OAuthConfig
		method string
	}{
		{"client_secret_basic", mcptest.Client{ID: "bot", Secret: "s3cret"},
			OAuthConfig{ClientID: "bot", ClientSecret: "s3cret", GrantType: GrantClientCredentials}, "client_secret_basic"},
		{"private_key_jwt ES256", mcptest.Client{ID: "bot", Key: &ecKey.PublicKey},
			OAuthConfig{ClientID: "bot", GrantType: GrantClientCredentials, PrivateKeyFile: writeKey("ec.pem", ecKey)}, "private_key_jwt"},
		{"private_key_jwt RS256", mcptest.Client{ID: "bot", Key: &rsaKey.PublicKey},
			OAuthConfig{ClientID: "bot", GrantType: GrantClientCredentials, PrivateKeyFile: writeKey("rsa.pem", rsaKey), SigningAlgorithm: "RS256"}, "private_key_jwt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as := mcptest.NewAuthServer(t)
			as.NoRegistration = true
			as.AddClient(tc.client)
			u := mcptest.OAuthHTTP(t, mcptest.New().Server, as)
			o := tc.oauth
			m := start(t, Options{Servers: []ServerConfig{{Name: "t", Type: TypeHTTP, URL: u, Scope: ScopeUser, OAuth: &o}}, OAuth: OAuthOptions{Home: t.TempDir()}})
			wantConnected(t, m)
			want := []mcptest.Grant{{Type: "client_credentials", Client: "bot", AuthMethod: tc.method, Scopes: []string{"mcp"}}}
			if diff := cmp.Diff(want, as.Grants()); diff != "" {
				t.Errorf("grants mismatch (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("wrong secret", func(t *testing.T) {
		as := mcptest.NewAuthServer(t)
		as.AddClient(mcptest.Client{ID: "bot", Secret: "s3cret"})
		u := mcptest.OAuthHTTP(t, mcptest.New().Server, as)
		o := OAuthConfig{ClientID: "bot", ClientSecret: "nope", GrantType: GrantClientCredentials}
		m := start(t, Options{Servers: []ServerConfig{{Name: "t", Type: TypeHTTP, URL: u, Scope: ScopeUser, OAuth: &o}},
			Reconnect: Backoff{Base: time.Millisecond, Max: time.Millisecond, Attempts: 1}})
		st := m.Status()[0]
		if st.Status != StatusFailed || !strings.Contains(st.Reason, "authorize t: token request") || !strings.Contains(st.Reason, "invalid_client") {
			t.Errorf("status = %s (%s), want failed naming the token request and invalid_client", st.Status, st.Reason)
		}
	})
}

// TestLoginSaysWhyItFailed: a login that cannot listen on its configured callback port fails
// with the reason (the connection's status and the bind error), not an empty wrapped error.
func TestLoginSaysWhyItFailed(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	as := mcptest.NewAuthServer(t)
	as.NoRegistration = true
	as.AddClient(mcptest.Client{ID: "keel-pre", Secret: "s3cret", RedirectURIs: []string{"http://127.0.0.1/callback"}})
	u := mcptest.OAuthHTTP(t, mcptest.New().Server, as)
	o := OAuthConfig{ClientID: "keel-pre", ClientSecret: "s3cret", CallbackPort: taken.Addr().(*net.TCPAddr).Port}
	cfg := ServerConfig{Name: "t", Type: TypeHTTP, URL: u, Scope: ScopeUser, OAuth: &o}
	var opened atomic.Int32
	m := start(t, Options{Servers: []ServerConfig{cfg}, OAuth: OAuthOptions{Home: t.TempDir()}})
	err = m.Login(t.Context(), "t", browser(&opened))
	if err == nil {
		t.Fatal("login succeeded on a callback port another listener holds")
	}
	if msg := err.Error(); !strings.Contains(msg, "listen for the authorization redirect") || strings.Contains(msg, "%!") {
		t.Errorf("login error = %q, want the reason it could not listen", msg)
	}
}
