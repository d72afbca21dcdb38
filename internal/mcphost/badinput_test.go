package mcphost

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/keel-dev/keel/internal/mcphost/mcptest"
	"github.com/keel-dev/keel/internal/waittest"
)

// TestBadServers: a server that misbehaves fails with a clear reason naming it and what was
// wrong; the process does not crash, and a good server beside it connects and answers.
func TestBadServers(t *testing.T) {
	insecure := func(md *oauthex.AuthServerMeta) { md.AuthorizationEndpoint = "http://login.example.com/authorize" }
	otherIssuer := func(md *oauthex.AuthServerMeta) { md.Issuer = "https://impostor.example.com" }
	for _, tc := range []struct {
		name string
		// bad returns the misbehaving server's entry; it is named "bad".
		bad  func(t *testing.T) ServerConfig
		want []string // in the bad server's reason
	}{
		{"garbage instead of JSON-RPC", func(t *testing.T) ServerConfig {
			return ServerConfig{Type: TypeHTTP, URL: mcptest.BadHTTP(t, mcptest.BadGarbage)}
		}, []string{"initialize", "failed to decode response", "invalid character 'H'", "Hello! This is not JSON-RPC."}},
		{"truncated JSON-RPC", func(t *testing.T) ServerConfig {
			return ServerConfig{Type: TypeHTTP, URL: mcptest.BadHTTP(t, mcptest.BadTruncated)}
		}, []string{"initialize", "failed to decode response", "unexpected EOF"}},
		{"JSON that is not JSON-RPC", func(t *testing.T) ServerConfig {
			return ServerConfig{Type: TypeHTTP, URL: mcptest.BadHTTP(t, mcptest.BadNotRPC)}
		}, []string{"initialize", "invalid message version tag"}},
		{"an HTML page instead of JSON-RPC", func(t *testing.T) ServerConfig {
			return ServerConfig{Type: TypeHTTP, URL: mcptest.BadHTTP(t, mcptest.BadHTML)}
		}, []string{"initialize", `unsupported content type "text/html"`}},
		{"garbage on stdio", func(t *testing.T) ServerConfig {
			return stdioServer("bad", mcptest.ModeGarbage)
		}, []string{`the server wrote "Welcome to the shell! Type help for help." to stdout, which is not JSON-RPC`, "logs to stderr"}},
		{"unknown protocol version", func(t *testing.T) ServerConfig {
			return ServerConfig{Type: TypeHTTP, URL: mcptest.BadHTTP(t, mcptest.BadProtocol)}
		}, []string{`unsupported protocol version: "1999-01-01"`, "keel asked for 2025-11-25 and speaks"}},
		{"authorization endpoint not HTTPS", func(t *testing.T) ServerConfig {
			as := mcptest.NewAuthServer(t)
			as.EditMetadata = insecure
			return ServerConfig{Type: TypeHTTP, URL: mcptest.OAuthHTTP(t, mcptest.New().Server, as)}
		}, []string{"authorize bad", `authorization_endpoint: URL "http://login.example.com/authorize" does not use HTTPS`}},
		{"metadata redirects to plain HTTP", func(t *testing.T) ServerConfig {
			as := mcptest.NewAuthServer(t)
			as.MetadataRedirect = "http://login.example.com/.well-known/oauth-authorization-server"
			return ServerConfig{Type: TypeHTTP, URL: mcptest.OAuthHTTP(t, mcptest.New().Server, as)}
		}, []string{"authorize bad", "refusing the redirect", "to http://login.example.com/.well-known/oauth-authorization-server: not HTTPS"}},
		{"token endpoint answers garbage", func(t *testing.T) ServerConfig {
			as := mcptest.NewAuthServer(t)
			as.GarbageTokens = true
			return ServerConfig{Type: TypeHTTP, URL: mcptest.OAuthHTTP(t, mcptest.New().Server, as)}
		}, []string{"authorize bad", "token exchange failed", "cannot parse json"}},
		{"metadata issuer does not match", func(t *testing.T) ServerConfig {
			as := mcptest.NewAuthServer(t)
			as.EditMetadata = otherIssuer
			return ServerConfig{Type: TypeHTTP, URL: mcptest.OAuthHTTP(t, mcptest.New().Server, as)}
		}, []string{"authorize bad", `metadata issuer "https://impostor.example.com" does not match`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := tc.bad(t)
			bad.Name, bad.Scope = "bad", ScopeUser
			good := ServerConfig{Name: "t", Type: TypeHTTP, URL: mcptest.HTTP(t, mcptest.New().Server), Scope: ScopeUser}
			var opened atomic.Int32
			m := start(t, Options{Servers: []ServerConfig{bad, good}, ConnectTimeout: waittest.Scale(10 * time.Second),
				Reconnect: Backoff{Base: time.Hour, Max: time.Hour, Attempts: 1},
				OAuth:     OAuthOptions{Home: t.TempDir(), Authorize: signIn(&opened)}})
			st := m.Status()
			if st[0].Status != StatusFailed {
				t.Fatalf("the bad server: %s (%s), want failed", st[0].Status, st[0].Reason)
			}
			if opened.Load() != 0 && !strings.Contains(tc.name, "token endpoint") {
				t.Errorf("the user was sent to a browser %d times for a server that should be refused first", opened.Load())
			}
			for _, w := range tc.want {
				if !strings.Contains(st[0].Reason, w) {
					t.Errorf("reason %q lacks %q", st[0].Reason, w)
				}
			}
			if st[1].Status != StatusConnected {
				t.Fatalf("the good server beside it: %s (%s)", st[1].Status, st[1].Reason)
			}
			if res := call(t, m, "mcp__t__echo", `{"text":"still here"}`); res.IsError || res.ResultText() != "still here" {
				t.Errorf("good server's echo = %q", res.ResultText())
			}
		})
	}
}

// TestBadCallAnswer: a connected server that answers a call with broken JSON-RPC gives the
// model an error result naming the server; the server beside it keeps working.
func TestBadCallAnswer(t *testing.T) {
	bad := ServerConfig{Name: "bad", Type: TypeHTTP, URL: mcptest.BadHTTP(t, mcptest.BadCall), Scope: ScopeUser}
	good := ServerConfig{Name: "t", Type: TypeHTTP, URL: mcptest.HTTP(t, mcptest.New().Server), Scope: ScopeUser}
	m := start(t, Options{Servers: []ServerConfig{bad, good}, Reconnect: Backoff{Base: time.Hour, Max: time.Hour, Attempts: 1}})
	res := call(t, m, "mcp__bad__broken", `{}`)
	if !res.IsError || !strings.Contains(res.ResultText(), "mcp__bad__broken") || !strings.Contains(res.ResultText(), "unexpected EOF") {
		t.Errorf("broken answer = %q (error %v), want an error naming the tool and what was wrong", res.ResultText(), res.IsError)
	}
	if res := call(t, m, "mcp__t__echo", `{"text":"still here"}`); res.IsError || res.ResultText() != "still here" {
		t.Errorf("good server's echo = %q", res.ResultText())
	}
}
