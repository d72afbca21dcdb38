package mcphost

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/atomicfile"
)

// ErrNoAuthorizationAsked says a login found a server that did not ask for authorization.
var ErrNoAuthorizationAsked = errors.New("the server did not ask for authorization")

func (o OAuthOptions) loginTimeout() time.Duration {
	if o.LoginTimeout > 0 {
		return o.LoginTimeout
	}
	return DefaultLoginTimeout
}

func (c *conn) loginState() *loginState {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	return c.login
}

// Login authorizes keel with the HTTP server called name anew, whether or not it has
// tokens: it reconnects the server with authorize as the way to the browser, so the one
// authorization happens where the server asks for it (on initialize, or on the first
// listing), with the scopes it asks for plus those it asked for before. The new tokens are
// stored and the server stays connected. It gives the user OAuth.LoginTimeout. A server
// that never asks gives [ErrNoAuthorizationAsked] (and stays connected).
func (m *Manager) Login(ctx context.Context, name string, authorize func(ctx context.Context, authURL string) error) error {
	c := m.find(name)
	if c == nil {
		return fmt.Errorf("login %s: no such MCP server", name)
	}
	if c.cfg.Type != TypeHTTP {
		return fmt.Errorf("login %s: only streamable HTTP servers use OAuth; this one is %s", name, c.cfg.Type)
	}
	if c.cfg.Disabled != "" {
		return fmt.Errorf("login %s: server is disabled: %s", name, c.cfg.Disabled)
	}
	if authorize == nil {
		return fmt.Errorf("login %s: no way to open the authorization page", name)
	}
	l := &loginState{authorize: authorize}
	m.mu.Lock()
	c.login = l
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		c.login = nil
		m.mu.Unlock()
	}()
	err := m.Reconnect(ctx, name)
	m.mu.Lock()
	authorized := l.authorized
	m.mu.Unlock()
	switch {
	case err != nil:
		// Reconnect's own prefix repeats the name; its cause is what the user needs. An error
		// that wraps nothing is the cause itself (a failed connection's status and reason).
		if cause := errors.Unwrap(err); cause != nil {
			err = cause
		}
		return fmt.Errorf("login %s: %w", name, err)
	case !authorized:
		return fmt.Errorf("login %s: %w", name, ErrNoAuthorizationAsked)
	}
	return nil
}

// clientSecret is the pre-registered client's secret: from the configuration, else the one
// `keel mcp add --client-secret` stored, else $MCP_CLIENT_SECRET.
func (m *Manager) clientSecret(cfg ServerConfig) string {
	if cfg.OAuth != nil && cfg.OAuth.ClientSecret != "" {
		return cfg.OAuth.ClientSecret
	}
	if home := m.opts.OAuth.Home; home != "" {
		if b, err := os.ReadFile(SecretPath(home, cfg)); err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	return m.opts.OAuth.ClientSecret
}

// SecretPath is where `keel mcp add --client-secret` keeps a server's client secret, so it
// never lands in a configuration file a project may commit.
func SecretPath(home string, cfg ServerConfig) string {
	return filepath.Join(home, "mcp-auth", AuthKey(cfg)+".secret")
}

// SaveClientSecret stores a server's client secret under home, readable by the user only.
func SaveClientSecret(home string, cfg ServerConfig, secret string) error {
	path := SecretPath(home, cfg)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("save client secret: %w", err)
	}
	if err := atomicfile.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		return fmt.Errorf("save client secret: %w", err)
	}
	return nil
}
