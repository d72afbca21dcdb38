package mcphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/keel-dev/keel/internal/mcphost/mcptest"
)

// browser is an OAuthOptions.Authorize that plays the user: it opens the authorization page
// with an HTTP client, which follows the redirect back to keel's loopback listener.
func browser(opened *atomic.Int32) func(context.Context, string) error {
	return func(ctx context.Context, u string) error {
		opened.Add(1)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("authorization page: %s: %s", resp.Status, body)
		}
		return nil
	}
}

// oauthServer starts an authorization server and an MCP server it protects.
func oauthServer(t *testing.T) (*mcptest.AuthServer, ServerConfig) {
	as := mcptest.NewAuthServer(t)
	url := mcptest.OAuthHTTP(t, mcptest.New().Server, as)
	return as, ServerConfig{Name: "t", Type: TypeHTTP, URL: url, Scope: ScopeUser}
}

func readStored(t *testing.T, path string) storedAuth {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var st storedAuth
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func wantConnected(t *testing.T, m *Manager) {
	t.Helper()
	if st := m.Status()[0]; st.Status != StatusConnected {
		t.Fatalf("status = %s (%s), want connected", st.Status, st.Reason)
	}
	if res := call(t, m, "mcp__t__echo", `{"text":"hi"}`); res.IsError || res.ResultText() != "hi" {
		t.Fatalf("echo = %q (error %v)", res.ResultText(), res.IsError)
	}
}

// TestOAuthAuthorizeThenReuse: the first connect runs the flow (discovery, registration,
// PKCE, loopback redirect) and stores the tokens with mode 0600; a later manager uses them
// without asking the user.
func TestOAuthAuthorizeThenReuse(t *testing.T) {
	as, cfg := oauthServer(t)
	home := t.TempDir()
	var opened atomic.Int32
	m := start(t, Options{Servers: []ServerConfig{cfg}, OAuth: OAuthOptions{Home: home, Authorize: browser(&opened)}})
	wantConnected(t, m)
	if diff := cmp.Diff(mcptest.AuthCounts{Registrations: 1, Authorizations: 1, Exchanges: 1}, as.Counts()); diff != "" {
		t.Errorf("authorization server counts mismatch (-want +got):\n%s", diff)
	}
	if opened.Load() != 1 {
		t.Errorf("authorization page opened %d times, want 1", opened.Load())
	}
	path := AuthPath(home, cfg)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode = %v, want 0600", fi.Mode().Perm())
	}
	if di, err := os.Stat(filepath.Dir(path)); err != nil || di.Mode().Perm() != 0o700 {
		t.Errorf("token dir = %v, %v; want mode 0700", di, err)
	}
	st := readStored(t, path)
	if st.ServerURL != cfg.URL || st.Token.AccessToken == "" || st.Token.RefreshToken == "" || st.ClientID == "" {
		t.Errorf("stored tokens incomplete: %+v", st)
	}
	m.Close()

	m2 := start(t, Options{Servers: []ServerConfig{cfg}, OAuth: OAuthOptions{Home: home, Authorize: browser(&opened)}})
	wantConnected(t, m2)
	// The standalone stream carries the token too: list_changed arrives.
	if res := call(t, m2, "mcp__t__add_tool", `{"name":"fresh"}`); res.IsError {
		t.Fatal(res.ResultText())
	}
	waitFor(t, m2, func() bool { return slices.Contains(toolNames(m2.Tools(t.Context())), "mcp__t__fresh") })
	if opened.Load() != 1 {
		t.Errorf("second manager opened the authorization page again")
	}
	if diff := cmp.Diff(mcptest.AuthCounts{Registrations: 1, Authorizations: 1, Exchanges: 1}, as.Counts()); diff != "" {
		t.Errorf("second manager asked the authorization server again (-want +got):\n%s", diff)
	}
}

// TestOAuthRefresh: an expired access token is replaced through the refresh token, without
// the user (no Authorize hook), and the new tokens are stored.
func TestOAuthRefresh(t *testing.T) {
	for _, tc := range []struct {
		name string
		// fileExpired also marks the stored token expired, so the client refreshes before
		// sending; otherwise only the server rejects it and the 401 leads to the refresh.
		fileExpired bool
	}{
		{"expired on file", true},
		{"rejected by server", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as, cfg := oauthServer(t)
			home := t.TempDir()
			var opened atomic.Int32
			m := start(t, Options{Servers: []ServerConfig{cfg}, OAuth: OAuthOptions{Home: home, Authorize: browser(&opened)}})
			wantConnected(t, m)
			m.Close()
			path := AuthPath(home, cfg)
			before := readStored(t, path)
			as.ExpireAccessTokens()
			if tc.fileExpired {
				st := before
				st.Token.Expiry = time.Now().Add(-time.Minute)
				data, _ := json.Marshal(st)
				if err := os.WriteFile(path, data, 0o600); err != nil {
					t.Fatal(err)
				}
			}

			m2 := start(t, Options{Servers: []ServerConfig{cfg}, OAuth: OAuthOptions{Home: home}})
			wantConnected(t, m2)
			if diff := cmp.Diff(mcptest.AuthCounts{Registrations: 1, Authorizations: 1, Exchanges: 1, Refreshes: 1}, as.Counts()); diff != "" {
				t.Errorf("authorization server counts mismatch (-want +got):\n%s", diff)
			}
			after := readStored(t, path)
			if after.Token.AccessToken == before.Token.AccessToken || after.Token.RefreshToken == before.Token.RefreshToken {
				t.Error("refreshed tokens were not stored")
			}
			if !after.Token.Expiry.After(time.Now()) {
				t.Errorf("stored expiry %v is not in the future", after.Token.Expiry)
			}
		})
	}
}

// TestOAuthNeedsAuth: with nobody to ask, a server without usable tokens is needs-auth, with
// a reason naming the command that fixes it, and nobody is sent to the authorization page.
func TestOAuthNeedsAuth(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, as *mcptest.AuthServer, cfg ServerConfig, home string)
	}{
		{"no tokens", func(*testing.T, *mcptest.AuthServer, ServerConfig, string) {}},
		{"refresh token revoked", func(t *testing.T, as *mcptest.AuthServer, cfg ServerConfig, home string) {
			var opened atomic.Int32
			m := start(t, Options{Servers: []ServerConfig{cfg}, OAuth: OAuthOptions{Home: home, Authorize: browser(&opened)}})
			wantConnected(t, m)
			m.Close()
			as.ExpireAccessTokens()
			as.RevokeRefreshTokens()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as, cfg := oauthServer(t)
			home := t.TempDir()
			tc.setup(t, as, cfg, home)
			before := as.Counts()
			m := start(t, Options{Servers: []ServerConfig{cfg}, OAuth: OAuthOptions{Home: home},
				Reconnect: Backoff{Base: time.Millisecond, Max: time.Millisecond, Attempts: 3}})
			st := m.Status()[0]
			if st.Status != StatusNeedsAuth {
				t.Fatalf("status = %s (%s), want needs-auth", st.Status, st.Reason)
			}
			if diff := cmp.Diff("server \"t\" needs authorization: run `keel mcp login t`", st.Reason); diff != "" {
				t.Errorf("reason mismatch (-want +got):\n%s", diff)
			}
			if len(m.Tools(t.Context())) != 0 {
				t.Error("a needs-auth server offers tools")
			}
			if got := as.Counts(); got.Authorizations != before.Authorizations {
				t.Errorf("authorizations went from %d to %d without a user", before.Authorizations, got.Authorizations)
			}
		})
	}
}

// TestOAuthLogin: Login authorizes a server that is needs-auth and connects it, with one
// authorization (one registration, one page opened); a second Login asks again even though
// tokens are stored.
func TestOAuthLogin(t *testing.T) {
	as, cfg := oauthServer(t)
	home := t.TempDir()
	m := start(t, Options{Servers: []ServerConfig{cfg}, OAuth: OAuthOptions{Home: home}})
	if st := m.Status()[0]; st.Status != StatusNeedsAuth {
		t.Fatalf("status = %s, want needs-auth", st.Status)
	}
	if err := m.Login(t.Context(), "t", nil); err == nil || !strings.Contains(err.Error(), "no way to open") {
		t.Errorf("Login without a browser = %v", err)
	}
	var opened atomic.Int32
	if err := m.Login(t.Context(), "t", browser(&opened)); err != nil {
		t.Fatal(err)
	}
	wantConnected(t, m)
	if diff := cmp.Diff(mcptest.AuthCounts{Registrations: 1, Authorizations: 1, Exchanges: 1}, as.Counts()); diff != "" {
		t.Errorf("one login: authorization server counts mismatch (-want +got):\n%s", diff)
	}
	if err := m.Login(t.Context(), "t", browser(&opened)); err != nil {
		t.Fatal(err)
	}
	wantConnected(t, m)
	if got := as.Counts().Authorizations; got != 2 || opened.Load() != 2 {
		t.Errorf("authorizations = %d, page opened %d times; want 2 each", got, opened.Load())
	}

	// Another manager, headless, connects with the stored tokens.
	headless := start(t, Options{Servers: []ServerConfig{cfg}, OAuth: OAuthOptions{Home: home}})
	wantConnected(t, headless)

	if err := m.Logout("t"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(AuthPath(home, cfg)); !os.IsNotExist(err) {
		t.Errorf("token file after Logout: %v", err)
	}
}

// TestOAuthLoginWithoutChallenge: a server that never asks is reported as such.
func TestOAuthLoginWithoutChallenge(t *testing.T) {
	url := mcptest.HTTP(t, mcptest.New().Server)
	m := start(t, Options{Servers: []ServerConfig{{Name: "t", Type: TypeHTTP, URL: url, Scope: ScopeUser}}, OAuth: OAuthOptions{Home: t.TempDir()}})
	var opened atomic.Int32
	if err := m.Login(t.Context(), "t", browser(&opened)); !errors.Is(err, ErrNoAuthorizationAsked) {
		t.Errorf("Login = %v, want ErrNoAuthorizationAsked", err)
	}
	wantConnected(t, m)
}

func TestAuthKey(t *testing.T) {
	a := AuthKey(ServerConfig{Name: "my server", URL: "https://a.example/mcp"})
	b := AuthKey(ServerConfig{Name: "my server", URL: "https://b.example/mcp"})
	if a == b {
		t.Error("servers with different URLs share a token file")
	}
	if !strings.HasPrefix(a, "my_server-") || strings.ContainsAny(a, "/ ") {
		t.Errorf("key %q is not a safe file name", a)
	}
}
