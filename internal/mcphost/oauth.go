package mcphost

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// OAuthOptions configures OAuth for HTTP servers.
type OAuthOptions struct{}

// needsAuthError says a server wants authorization that was not (yet) given.
type needsAuthError struct{ msg string }

func (e *needsAuthError) Error() string { return e.msg }

func (m *Manager) oauthHandler(cfg ServerConfig, hc *http.Client) (auth.OAuthHandler, error) {
	return nil, nil
}
